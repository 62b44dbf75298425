"""Client conformance: `petstore-conformance client --command CMD` runs a client program against
scenario servers (the reference's own app with a scripted limiter) and judges what it sent
against the catalogue's client requirements (`role: client`).

- `scenarios.py`: what each scenario asks of the client and how its server answers;
- `scripted_limits.py`: the limiter a scenario server answers with;
- `recorder.py`: every request as it arrived, redacted, with its moments;
- `runner.py`: one scenario: its server, the client's process, its time limit;
- `rules.py`: one check function per rule, from a scenario's record to check results;
- `reports.py`: the verdict in the suite's own report forms;
- `command.py`: the command line.
"""
