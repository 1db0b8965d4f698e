"""The testbed binary (scenarios' `testbed`) as a child process, for the Python drivers in ci/
(console_browser.py, kube_python_client.py): started with the given arguments, its banner
read line by line until it says it is ready, stopped with Ctrl-C as a person would.

Standard library only.
"""

import queue
import signal
import subprocess
import threading
import time


class TestbedProcess:
    def __init__(self, argv, error=RuntimeError, timeout=60):
        """Starts `argv` and waits up to `timeout` s for its `Ctrl-C to stop` line; raises
        `error` with the end of its stderr if it exits or times out first. `banner` holds
        the stdout lines read until then."""
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.stderr = []
        self.banner = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines.put), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.stderr.append), daemon=True).start()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                raise error(f"testbed not ready (exit {self.proc.poll()}): {''.join(self.stderr)[-2000:]}")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            self.banner.append(line)
            if line.startswith("Ctrl-C to stop"):
                break

    @staticmethod
    def _pump(stream, put):
        for line in stream:
            put(line)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
