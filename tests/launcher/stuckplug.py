"""A wedged plugin: answers the handshake, then never reads stdin again and ignores SIGTERM.

Only the kernel's last resorts can end it: SIGKILL after the grace periods, or PR_SET_PDEATHSIG when the
kernel itself dies. Deliberately written without the SDK (whose runtime exits on stdin EOF).
"""

import json
import os
import signal
import sys
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
request = json.loads(sys.stdin.readline())
answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"protocol": 1, "sdk": "stuck/1"}}
sys.stdout.write(json.dumps(answer) + "\n")
sys.stdout.flush()
with open(os.environ["STUCK_PID_FILE"], "w") as handle:
    handle.write(str(os.getpid()))
while True:
    time.sleep(3600)
