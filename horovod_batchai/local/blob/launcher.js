// Runs Azurite's blob service (dist/src/blob/main.js of the pinned package) in this process, with three
// things the local service needs and Azurite does not offer:
//
// - Accounts and keys arrive on stdin, one JSON line each: {"seq": N, "accounts": "name:key1:key2;..."}.
//   The first line is read before Azurite starts (so keys are never on a command line); every later line
//   replaces the account set at once. Azurite itself re-reads AZURITE_ACCOUNTS only every minute, and
//   only from its own environment. Each line is answered on stdout: "accounts N updated" or
//   "accounts N rejected" (Azurite falls back to its public well-known account on a string it cannot
//   parse; that must never pass silently).
// - It stops when stdin reaches its end, i.e. when the local service closed the pipe or died (even by
//   SIGKILL): Azurite then shuts down as on SIGTERM, saving its metadata.
// - With "--listen-fd N" it serves on the listening socket inherited as descriptor N instead of binding
//   a port: the local service binds the port itself, publishes it, and starts Azurite only when a blob
//   request arrives (connections wait in the socket's queue meanwhile).
//
// Usage: node launcher.js <azurite package dir> [--listen-fd N] [azurite-blob options...]
"use strict";

const net = require("net");
const path = require("path");

const azuriteDir = process.argv[2];
if (process.argv[3] === "--listen-fd") {
  const fd = Number(process.argv[4]);
  process.argv.splice(3, 2);
  const originalListen = net.Server.prototype.listen;
  // Azurite's blob service calls listen(port, host, callback) once, on its one HTTP(S) server.
  net.Server.prototype.listen = function listen(...args) {
    net.Server.prototype.listen = originalListen;
    const callback = args.find((arg) => typeof arg === "function");
    return originalListen.call(this, { fd }, callback);
  };
}
const AccountDataStore = require(path.join(azuriteDir, "dist", "src", "common", "AccountDataStore")).default;
const stores = [];
const originalInit = AccountDataStore.prototype.init;
AccountDataStore.prototype.init = function init(...args) {
  stores.push(this);
  return originalInit.apply(this, args);
};

function accountNames(accounts) {
  return accounts.split(";").filter((entry) => entry.length > 0).map((entry) => entry.split(":")[0]);
}

function apply(message) {
  process.env.AZURITE_ACCOUNTS = message.accounts;
  for (const store of stores) {
    store.refresh();
  }
  const names = accountNames(message.accounts);
  // No store recorded means this Azurite is laid out differently from the pinned one.
  return stores.length > 0 && names.length > 0
    && stores.every((store) => names.every((name) => store.getAccount(name) !== undefined));
}

let started = false;
let buffer = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffer += chunk;
  let end;
  while ((end = buffer.indexOf("\n")) >= 0) {
    const line = buffer.slice(0, end);
    buffer = buffer.slice(end + 1);
    let message;
    try {
      message = JSON.parse(line);
    } catch (err) {
      console.log("accounts ? rejected");
      continue;
    }
    if (!started) {
      started = true;
      process.env.AZURITE_ACCOUNTS = message.accounts;
      startAzurite();
      continue;
    }
    console.log(`accounts ${message.seq} ${apply(message) ? "updated" : "rejected"}`);
  }
});
process.stdin.on("end", () => {
  if (!started) {
    process.exit(0);
  }
  // Azurite's own shutdown path (it listens for SIGTERM); if it hangs, leave anyway.
  setTimeout(() => process.exit(0), 10000).unref();
  process.kill(process.pid, "SIGTERM");
});

function startAzurite() {
  const main = path.join(azuriteDir, "dist", "src", "blob", "main.js");
  // main.js parses process.argv as [node, script, options...].
  process.argv.splice(1, 2, main);
  require(main);
}
