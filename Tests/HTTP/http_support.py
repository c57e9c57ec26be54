"""What the HTTP API's test programs share (imported from their folder)."""


def rss_kib(pid):
    """The resident memory of process `pid`, in KiB."""
    with open("/proc/%s/status" % pid) as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for pid %s" % pid)
