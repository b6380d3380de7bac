# Stand-in for the desktop app's Config module. The native core's debug_log() does
# `import Config; Config.logger.debug(msg)`; the app's logger is DEBUG-level to the console,
# so this one is too (run.sh sends stderr to a log file).
import logging
import sys

logger = logging.getLogger("debug_logger")
logger.setLevel(logging.DEBUG)
_h = logging.StreamHandler(sys.stderr)
_h.setFormatter(logging.Formatter("%(asctime)s - %(levelname)s - %(message)s"))
logger.addHandler(_h)
