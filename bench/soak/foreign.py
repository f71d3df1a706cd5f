#!/usr/bin/env python3
"""Foreign traffic at every TCP port a job listens on, until the job ends: random bytes, HTTP
requests, idle half-open connections, and bursts of connects (RATE per second in all).

Usage: foreign.py PID [RATE]. PID is the job's launcher; its descendants' listening sockets are
found through /proc (re-scanned every second, so ports opened later are hit too). Prints one
summary line: ports seen and connections of each kind."""
import errno, os, random, select, socket, sys, time

def descendants(pid):
    kids, todo = {pid}, [pid]
    while todo:
        p = todo.pop()
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                for c in open(f"/proc/{p}/task/{t}/children").read().split():
                    if int(c) not in kids:
                        kids.add(int(c)); todo.append(int(c))
        except OSError:
            pass
    return kids

def listening_ports(pids):
    inodes = set()
    for p in pids:
        try:
            for fd in os.listdir(f"/proc/{p}/fd"):
                link = os.readlink(f"/proc/{p}/fd/{fd}")
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
        except OSError:
            pass
    ports = set()
    for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        try:
            for line in open(table).read().splitlines()[1:]:
                f = line.split()
                if f[3] == "0A" and f[9] in inodes:  # LISTEN
                    addr_hex, port_hex = f[1].split(":")
                    raw = bytes.fromhex(addr_hex)
                    # /proc prints the address as 32-bit words in host (little-endian) order.
                    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
                    addr = socket.inet_ntop(family, raw)
                    if addr in ("0.0.0.0", "::"):
                        addr = "127.0.0.1" if family == socket.AF_INET else "::1"
                    ports.add((family, addr, int(port_hex, 16)))
        except OSError:
            pass
    return ports

def main():
    pid, rate = int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    rng = random.Random(7)
    counts = {"random": 0, "http": 0, "half_open": 0, "connect": 0, "refused": 0}
    idle, ports, last_scan = [], set(), 0.0
    started = time.monotonic()
    while os.path.exists(f"/proc/{pid}"):
        now = time.monotonic()
        if now - last_scan > 1:
            ports |= listening_ports(descendants(pid))
            last_scan = now
        if not ports:
            time.sleep(0.01)
            continue
        t0 = time.monotonic()
        # One tenth of a second's worth, all at once: non-blocking connects, then what each kind
        # sends to the ones that completed, so a port that never accepts costs no waiting.
        batch = []
        for _ in range(max(1, rate // 10)):
            family, host, port = rng.choice(sorted(ports))
            s = socket.socket(family, socket.SOCK_STREAM)
            s.setblocking(False)
            err = s.connect_ex((host, port))
            if err not in (0, errno.EINPROGRESS):
                counts["refused"] += 1
                s.close()
                continue
            batch.append((s, rng.choice(["random", "http", "half_open", "connect"])))
        pending = {s.fileno(): (s, kind) for s, kind in batch}
        deadline = time.monotonic() + 0.05
        while pending and time.monotonic() < deadline:
            _, writable, _ = select.select([], [p[0] for p in pending.values()], [], 0.01)
            for s in writable:
                s, kind = pending.pop(s.fileno())
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                    counts["refused"] += 1
                    s.close()
                    continue
                try:
                    if kind == "random":
                        s.send(os.urandom(rng.randint(1, 4096)))
                    elif kind == "http":
                        s.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                except OSError:
                    pass
                counts[kind] += 1
                if kind == "half_open" and len(idle) < 200:
                    idle.append(s)  # connected, says nothing, stays open
                else:
                    s.close()
        for s, _ in pending.values():  # not accepted in time (a full backlog): given up
            counts["refused"] += 1
            s.close()
        time.sleep(max(0.0, 0.1 - (time.monotonic() - t0)))
        if len(idle) >= 200:  # recycle the idle ones now and then
            for s in idle[:100]:
                s.close()
            del idle[:100]
    for s in idle:
        s.close()
    secs = max(1e-9, time.monotonic() - started)
    attempts = sum(counts.values())
    print("foreign traffic: ports " + ",".join(f"{h}:{p}" for _, h, p in sorted(ports)) + "; " +
          ", ".join(f"{k} {v}" for k, v in counts.items()) + f"; {attempts / secs:.0f} connects/s over {secs:.0f} s")

if __name__ == "__main__":
    main()
