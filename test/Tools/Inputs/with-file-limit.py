"""with-file-limit.py BYTES CMD...: runs CMD with files limited to BYTES
(RLIMIT_FSIZE), as a full disk would stop it; exits with CMD's status."""
import os
import resource
import sys

limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
os.execvp(sys.argv[2], sys.argv[2:])
