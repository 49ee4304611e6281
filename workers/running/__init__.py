"""Running a child process from a worker: the cancel token a worker's stop reaches, and the
process runner that drains bounded output and stops the child's whole group. The executors and the
agent helpers both stand on these."""
