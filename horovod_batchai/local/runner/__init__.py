"""Running jobs: the scheduler, job and node states, node setup and the processes of a job."""
