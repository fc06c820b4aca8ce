"""What live-switch.py and pause.py share about a supervised bundle: a free loopback port for
it to listen on, and the supervisor's record (the state directory's `supervisor` file) as a
dict. Python 3 standard library only."""
import os, socket


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def supervisor_fields(state):
    try:
        with open(os.path.join(state, "supervisor")) as f:
            return dict(line.strip().split("=", 1) for line in f if "=" in line)
    except OSError:
        return {}
