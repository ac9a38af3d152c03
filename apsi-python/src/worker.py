# The Python side of `use python` (apsi-python): a worker process that the
# Apsi interpreter starts with `python3 -c <this source> IN OUT`. Requests
# arrive on descriptor IN and replies leave on OUT (two private pipes), so that code which prints writes straight
# to the inherited stdout and stderr. Each message is a frame: an 8-byte
# little-endian length, then the body. Values use the tagged encoding that
# apsi-python/src/wire.rs describes (the two files change together).
# Only cheap modules load at start-up; importlib, linecache and traceback
# (which pulls in re, tokenize, collections: ~20 ms) load when first needed.
import builtins
import os
import struct
import sys

PROTOCOL = 1
MAX_DEPTH = 200
_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1
_Q = struct.Struct("<q")
_D = struct.Struct("<d")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")

# numpy is imported on the first tensor that crosses; None: not tried yet.
_np = None

# Apsi dtype code <-> NumPy dtype (little-endian).
_CODES = {"f8": "<f8", "f4": "<f4", "f2": "<f2", "i8": "<i8", "i4": "<i4", "b1": "|b1", "i1": "|i1", "u1": "|u1"}
# NumPy kinds that are widened to a code Apsi has.
_WIDEN = {"<i2": "i4", "<u2": "i4", "<u4": "i8"}


class ConvertError(Exception):
    """A value that cannot cross; `kind` is the Apsi error kind to raise."""

    def __init__(self, kind, message, hint=""):
        Exception.__init__(self, message)
        self.kind = kind
        self.message = message
        self.hint = hint


def numpy():
    global _np
    if _np is None:
        try:
            import numpy as np
        except ImportError:
            raise ConvertError(
                "ModuleNotFoundError",
                "tensors cross to Python as NumPy arrays, but NumPy is not installed for " + sys.executable,
                "install it with: " + sys.executable + " -m pip install numpy (or point APSI_PYTHON at a Python that has it)",
            )
        _np = np
    return _np


def _short(text, limit=200):
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---- decoding (Apsi -> Python) ----


class Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def take(self, n):
        end = self.pos + n
        if end > len(self.data):
            raise ConvertError("ValueError", "truncated message from Apsi")
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def u32(self):
        return _U32.unpack(self.take(4))[0]

    def u64(self):
        return _U64.unpack(self.take(8))[0]

    def text(self):
        return self.take(self.u32()).decode("utf-8", "surrogatepass")

    def value(self, depth=0):
        if depth > MAX_DEPTH:
            raise ConvertError("ValueError", "value nested deeper than %d levels" % MAX_DEPTH)
        tag = self.take(1)
        if tag == b"N":
            return None
        if tag == b"T":
            return True
        if tag == b"F":
            return False
        if tag == b"i":
            return _Q.unpack(self.take(8))[0]
        if tag == b"f":
            return _D.unpack(self.take(8))[0]
        if tag == b"s":
            return self.text()
        if tag == b"y":
            return bytes(self.take(self.u32()))
        if tag == b"l":
            return [self.value(depth + 1) for _ in range(self.u32())]
        if tag == b"t":
            return tuple(self.value(depth + 1) for _ in range(self.u32()))
        if tag == b"d":
            out = {}
            for _ in range(self.u32()):
                k = self.value(depth + 1)
                out[k] = self.value(depth + 1)
            return out
        if tag == b"r":
            start, stop, step = (_Q.unpack(self.take(8))[0] for _ in range(3))
            return range(start, stop, step)
        if tag == b"a":
            np = numpy()
            code = self.text()
            if code not in _CODES:
                raise ConvertError("TypeError", "unknown tensor element code %r" % code)
            shape = tuple(self.u64() for _ in range(self.u32()))
            raw = self.take(self.u64())
            return np.frombuffer(raw, dtype=_CODES[code]).reshape(shape).copy()
        raise ConvertError("ValueError", "unknown value tag %r in a message from Apsi" % tag)


# ---- encoding (Python -> Apsi) ----


def _type_name(x):
    t = type(x)
    mod = getattr(t, "__module__", "builtins")
    return t.__qualname__ if mod == "builtins" else mod + "." + t.__qualname__


def _int(out, x):
    if _I64_MIN <= x <= _I64_MAX:
        out.append(b"i")
        out.append(_Q.pack(x))
        return
    try:
        shown = str(x)
    except ValueError:
        shown = "an integer of %d bits" % x.bit_length()
    raise ConvertError(
        "OverflowError",
        "Python int %s does not fit Apsi's 64-bit int" % _short(shown),
        "convert it in Python first, for example to float(...) or str(...)",
    )


def _text(out, s):
    b = s.encode("utf-8", "surrogatepass")
    out.append(_U32.pack(len(b)))
    out.append(b)


def _array(out, a):
    np = numpy()
    if not a.flags.c_contiguous:
        a = a.copy(order="C")
    if a.dtype.str[0] == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    key = a.dtype.str
    code = None
    for c, k in _CODES.items():
        if k == key:
            code = c
    if code is None and key in _WIDEN:
        code = _WIDEN[key]
    if code is None and key == "<u8":
        if a.size and int(a.max()) > _I64_MAX:
            raise ConvertError("OverflowError", "a uint64 array holds %d, which does not fit Apsi's i64" % int(a.max()))
        code = "i8"
    if code is None:
        raise ConvertError(
            "TypeError",
            "a NumPy array of dtype %s has no Apsi tensor dtype" % a.dtype,
            "Apsi tensors take float64/32/16, int64/32/16/8, uint8/16/32 and bool arrays; convert with .astype(...)",
        )
    a = a.astype(_CODES[code], order="C", copy=False)
    out.append(b"a")
    _text(out, code)
    out.append(_U32.pack(a.ndim))
    for n in a.shape:
        out.append(_U64.pack(n))
    raw = a.tobytes()
    out.append(_U64.pack(len(raw)))
    out.append(raw)


def encode(out, x, depth=0):
    if depth > MAX_DEPTH:
        raise ConvertError("ValueError", "value nested deeper than %d levels (a list that contains itself?)" % MAX_DEPTH)
    t = type(x)
    if x is None:
        out.append(b"N")
    elif t is bool:
        out.append(b"T" if x else b"F")
    elif t is int:
        _int(out, x)
    elif t is float:
        out.append(b"f")
        out.append(_D.pack(x))
    elif t is str:
        out.append(b"s")
        _text(out, x)
    elif t is bytes or isinstance(x, (bytes, bytearray, memoryview)):
        b = bytes(x)
        out.append(b"y")
        out.append(_U32.pack(len(b)))
        out.append(b)
    elif t is list or t is tuple:
        out.append(b"l" if t is list else b"t")
        out.append(_U32.pack(len(x)))
        for item in x:
            encode(out, item, depth + 1)
    elif t is dict:
        out.append(b"d")
        out.append(_U32.pack(len(x)))
        for k, v in x.items():
            encode(out, k, depth + 1)
            encode(out, v, depth + 1)
    elif t is range:
        if not all(_I64_MIN <= n <= _I64_MAX for n in (x.start, x.stop, x.step)):
            raise ConvertError("OverflowError", "%r does not fit Apsi's 64-bit range" % (x,))
        out.append(b"r")
        out.append(_Q.pack(x.start) + _Q.pack(x.stop) + _Q.pack(x.step))
    elif isinstance(x, bool):
        out.append(b"T" if x else b"F")
    elif isinstance(x, float):
        out.append(b"f")
        out.append(_D.pack(float(x)))
    elif isinstance(x, int):
        _int(out, int(x))
    elif isinstance(x, str):
        out.append(b"s")
        _text(out, str(x))
    elif isinstance(x, (list, tuple)):
        encode(out, (list if isinstance(x, list) else tuple)(x), depth)
    elif isinstance(x, dict):
        encode(out, dict(x), depth)
    elif type(x).__module__ == "numpy" and isinstance(x, numpy().ndarray):
        _array(out, x)
    elif type(x).__module__ == "numpy" and isinstance(x, numpy().generic) and type(x.item()) is not type(x):
        encode(out, x.item(), depth + 1)
    else:
        raise ConvertError(
            "TypeError",
            "a Python %s has no Apsi equivalent: %s" % (_type_name(x), _short(repr(x))),
            "numbers, strings, lists, tuples, dicts, ranges, none and NumPy arrays convert; "
            "convert it in Python first (str(x), list(x), ...)",
        )


# ---- requests ----

namespace = {"__name__": "__apsi__", "__builtins__": builtins}


def resolve(name):
    """`pkg.mod.fn`: import the longest importable module prefix, then walk attributes."""
    if not name or any(not p.isidentifier() for p in name.split(".")):
        raise ValueError("python.call needs a dotted name such as 'math.gcd', found %r" % name)
    import importlib

    parts = name.split(".")
    if len(parts) == 1:
        if name in namespace:
            return namespace[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise NameError("name %r is not defined (define it with python.exec, or give a dotted name such as 'math.gcd')" % name)
    for cut in range(len(parts) - 1, 0, -1):
        modname = ".".join(parts[:cut])
        try:
            obj = importlib.import_module(modname)
        except ModuleNotFoundError as e:
            if e.name is not None and not (modname == e.name or modname.startswith(e.name + ".")):
                raise
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    if parts[0] in namespace:
        obj = namespace[parts[0]]
    else:
        obj = importlib.import_module(parts[0])
    for attr in parts[1:]:
        obj = getattr(obj, attr)
    return obj


_execs = [0]


# The code of each eval/exec by file name, for the lines of tracebacks.
_sources = {}


def source(code, filename, mode):
    """Compiles code under filename, remembered for tracebacks."""
    _sources.pop(filename, None)
    _sources[filename] = code
    if len(_sources) > 1000:
        # Only the newest are kept (a loop of exec calls must not grow forever).
        del _sources[next(iter(_sources))]
    return compile(code, filename, mode)


def handle(req):
    op = req[0]
    if op == "eval":
        return eval(source(req[1], "<python.eval>", "eval"), namespace)
    if op == "exec":
        # Numbered, so that a function from an earlier exec shows its own lines.
        _execs[0] += 1
        exec(source(req[1], "<python.exec #%d>" % _execs[0], "exec"), namespace)
        return None
    if op == "call":
        return resolve(req[1])(*req[2], **req[3])
    raise ValueError("unknown request %r" % (op,))


def python_error(e):
    import linecache
    import traceback

    for filename, code in _sources.items():
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename != "<string>"]
    lines = traceback.format_list(frames)
    text = "".join(lines).rstrip("\n").split("\n")
    # Python 3.11+ underlines the failing part with ~ and ^; Apsi has its own
    # caret, and leaving them out keeps the text the same on every Python.
    text = [t for t in text if t.strip(" ~^")][-12:]
    message = "".join(traceback.format_exception_only(type(e), e)).strip()
    name = _type_name(e)
    prefix = type(e).__qualname__ + ": "
    if message.startswith(prefix):
        message = message[len(prefix) :]
    elif message == type(e).__qualname__:
        message = ""
    return name, message, "\n".join(text)


def frame(out_file, parts):
    body = b"".join(parts)
    out_file.write(_U64.pack(len(body)))
    out_file.write(body)
    out_file.flush()


def read_exact(f, n):
    chunks = []
    while n:
        c = f.read(n)
        if not c:
            return None
        chunks.append(c)
        n -= len(c)
    return b"".join(chunks)


def flush_std():
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except Exception:
            pass


def watch_parent(parent):
    """Ends the worker when apsi is gone: killed during a long call, apsi
    never closes the request pipe, and the worker would run on as an orphan
    holding the terminal. Polls the parent pid (cheap, no signals needed)."""
    import time

    while True:
        time.sleep(0.25)
        if os.getppid() != parent:
            os._exit(1)


def main():
    import _thread

    _thread.start_new_thread(watch_parent, (os.getppid(),))
    requests = os.fdopen(int(sys.argv[1]), "rb")
    replies = os.fdopen(int(sys.argv[2]), "wb")
    del sys.argv[1:]
    # Processes Python code starts must not hold the pipes open.
    os.set_inheritable(requests.fileno(), False)
    os.set_inheritable(replies.fileno(), False)
    hello = []
    encode(hello, ("apsi-python-worker", PROTOCOL, sys.version.split()[0], sys.executable))
    frame(replies, [b"r"] + hello)
    while True:
        head = read_exact(requests, 8)
        if head is None:
            return
        body = read_exact(requests, _U64.unpack(head)[0])
        if body is None:
            return
        out = []
        try:
            try:
                req = Reader(body).value()
                result = handle(req)
            finally:
                flush_std()
            encode(out, result)
            out.insert(0, b"r")
        except ConvertError as e:
            out = [b"c"]
            for s in (e.kind, e.message, e.hint):
                _text(out, s)
        except BaseException as e:
            out = [b"p"]
            for s in python_error(e):
                _text(out, s)
        frame(replies, out)


try:
    main()
except (BrokenPipeError, KeyboardInterrupt):
    # Apsi went away (or the terminal interrupted both): nobody is listening.
    pass
