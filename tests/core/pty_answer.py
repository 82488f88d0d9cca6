"""Runs a command on a terminal of its own (a pty, its controlling
terminal) as a person at a terminal would: when the text PROMPT appears,
types ANSWER and Return. Prints everything the terminal showed (the
command's stdout and stderr, and the prompt) and exits with the command's
status; gives up after TIMEOUT seconds (status 124).

usage: pty_answer.py TIMEOUT PROMPT ANSWER -- COMMAND...
"""
import os
import pty
import select
import sys
import time


def main():
    timeout, prompt, answer = float(sys.argv[1]), sys.argv[2].encode(), sys.argv[3].encode()
    command = sys.argv[sys.argv.index("--") + 1:]
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(command[0], command)
    seen, answered = b"", False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the command ended: the terminal is gone
                break
            if not chunk:
                break
            seen += chunk
        if not answered and prompt in seen:
            os.write(fd, answer + b"\n")
            answered = True
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        sys.stdout.buffer.write(seen)
        return 124
    _, status = os.waitpid(pid, 0)
    sys.stdout.buffer.write(seen)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main())
