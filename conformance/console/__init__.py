"""The console: what a run of the checker prints, and nothing else prints.

- `areas`: the checker's own console by default: the target and plan, one line per area of
  the suite as it completes, the waits on one live line, a progress bar on long work;
- `progress`: what the run waits for and how far along long work is, said while it runs;
- `requirements`: one block per failed requirement, and the warned and not-tested lists;
- `closing`: a run's close (its conclusion and the evidence it leaves) and the lines it adds;
- `closed_pipe`: the output of a command whose reader may leave before it ends.

`requirements` is a leaf the reports and the client mode read (`plain`, the blocks); the rest
is the run's shell, above the reports.
"""
