"""End-to-end check of the Apsi Jupyter kernel with the real Jupyter stack.

Run by apsi-cli/tests/kernel_e2e.rs (which installs the kernelspec into a
temporary prefix and points JUPYTER_PATH at it):

    python run_notebook.py NOTEBOOK

1. nbclient executes NOTEBOOK headless with the `apsi` kernel; the cells
   tagged tour-* and raises-exception are checked (text, an HTML table of
   a tensor, a PNG image, the :time magic, an error with the CLI's text).
2. A kernel client interrupts a long loop, once by SIGINT (the kernelspec's
   interrupt_mode) and once by an interrupt_request on the control channel:
   each cell must end with KeyboardInterrupt and the session must go on.
3. A shutdown request ends the kernel process.

Prints what it checked; exits non-zero (an AssertionError) on the first
failure.
"""

import base64
import json
import sys
import time

import nbformat
from jupyter_client.manager import start_new_kernel
from nbclient import NotebookClient


def outputs_of(nb, tag):
    cells = [c for c in nb.cells if tag in c.get("metadata", {}).get("tags", [])]
    assert len(cells) == 1, f"expected one cell tagged {tag}, found {len(cells)}"
    return cells[0].outputs


def result(outs):
    rs = [o for o in outs if o.output_type == "execute_result"]
    assert len(rs) == 1, f"expected one execute_result, got {outs}"
    return rs[0]


def stdout(outs):
    return "".join(o.text for o in outs if o.output_type == "stream" and o.name == "stdout")


def check_notebook(path):
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, kernel_name="apsi", timeout=120, startup_timeout=60)
    client.execute()

    for c in nb.cells:
        if c.cell_type != "code":
            continue
        tags = c.get("metadata", {}).get("tags", [])
        errors = [o for o in c.outputs if o.output_type == "error"]
        if "raises-exception" not in tags:
            assert not errors, f"cell {c.id} failed: {errors}"
        assert c.execution_count is not None, f"cell {c.id} has no execution count"

    outs = outputs_of(nb, "tour-value")
    assert result(outs).data["text/plain"] == "7", outs
    print("ok: an expression's value as text/plain")

    outs = outputs_of(nb, "tour-print")
    assert "Hello from Apsi! 1024 bytes make a KiB\n" in stdout(outs), outs
    assert result(outs).data["text/plain"] == "'APSI'", outs
    print("ok: print as a stdout stream, then the value")

    r = result(outputs_of(nb, "tour-html"))
    html = r.data["text/html"]
    assert '<table class="apsi-tensor">' in html, html
    assert "shape (2, 3)" in html and "dtype f64" in html, html
    assert "<td>6.0</td>" in html, html
    assert r.data["text/plain"].startswith("tensor([[1.0, 2.0, 3.0],"), r.data
    print("ok: a tensor as an HTML table (shape and dtype in the caption) and text/plain")

    outs = outputs_of(nb, "tour-time")
    assert "time: " in stdout(outs), outs
    assert result(outs).data["text/plain"] == "499999500000", outs
    print("ok: the :time magic")

    outs = outputs_of(nb, "tour-bench")
    assert " runs: best " in stdout(outs) and "median" in stdout(outs), outs
    print("ok: the :bench magic")

    outs = outputs_of(nb, "raises-exception")
    errors = [o for o in outs if o.output_type == "error"]
    assert len(errors) == 1, outs
    e = errors[0]
    assert e.ename == "KeyError", e
    text = "\n".join(e.traceback)
    assert "KeyError" in text and "eve" in text and "<cell:" in text, text
    assert "\x1b" not in text, "colour codes in the traceback: " + repr(text)
    print("ok: an error cell with the CLI's diagnostic text, no colour codes")

    outs = outputs_of(nb, "tour-png")
    shown = [o for o in outs if o.output_type == "display_data"]
    assert len(shown) == 1 and "made with Apsi" in shown[0].data["text/html"], outs
    png = base64.b64decode(result(outs).data["image/png"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n", png[:16]
    print("ok: display(x) with _repr_html_, and a PNG from _repr_png_")

    # A `use plot` figure at the end of a cell shows as its PNG (640x360).
    png = base64.b64decode(result(outputs_of(nb, "tour-plot")).data["image/png"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n", png[:16]
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (640, 360), (width, height)
    print("ok: a use plot figure shown inline as a 640x360 PNG")


def run(kc, code, timeout=60):
    """Executes code; returns (reply content, iopub messages of it)."""
    seen = []
    reply = kc.execute_interactive(code, timeout=timeout, output_hook=seen.append)
    return reply["content"], seen


def shell_reply(kc, msg_id, timeout):
    deadline = time.monotonic() + timeout
    while True:
        m = kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
        if m["parent_header"].get("msg_id") == msg_id:
            return m["content"]


def check_interrupt():
    km, kc = start_new_kernel(kernel_name="apsi", startup_timeout=60)
    try:
        content, _ = run(kc, "n = 0")
        assert content["status"] == "ok", content

        # 1. SIGINT, as the notebook's stop button sends it (interrupt_mode: signal).
        msg_id = kc.execute("while true:\n    n = n + 1\n")
        time.sleep(1.0)
        km.interrupt_kernel()
        content = shell_reply(kc, msg_id, 30)
        assert content["status"] == "error", content
        assert content["ename"] == "KeyboardInterrupt", content
        assert km.is_alive(), "the kernel died of the interrupt"
        content, seen = run(kc, "n > 0")
        results = [m for m in seen if m["msg_type"] == "execute_result"]
        assert content["status"] == "ok" and results, (content, seen)
        assert results[0]["content"]["data"]["text/plain"] == "true", results
        print("ok: SIGINT stops a while loop with KeyboardInterrupt; the session goes on")

        # 2. interrupt_request on the control channel, in a for-range loop.
        msg_id = kc.execute("for i in range(10 ** 15):\n    n = n + 1\n")
        time.sleep(1.0)
        kc.control_channel.send(kc.session.msg("interrupt_request", {}))
        content = shell_reply(kc, msg_id, 30)
        assert content["status"] == "error" and content["ename"] == "KeyboardInterrupt", content
        ctl = kc.control_channel.get_msg(timeout=10)
        assert ctl["msg_type"] == "interrupt_reply", ctl
        content, seen = run(kc, "print(n > 1)")
        text = "".join(m["content"].get("text", "") for m in seen if m["msg_type"] == "stream")
        assert content["status"] == "ok" and text == "true\n", (content, seen)
        print("ok: interrupt_request stops a for loop; the session goes on")

        # 3. `except Error` lets KeyboardInterrupt through (as Python's
        # `except Exception`); `except KeyboardInterrupt` catches it.
        msg_id = kc.execute("try:\n    while true:\n        n = n + 1\nexcept Error:\n    print('swallowed')\n")
        time.sleep(1.0)
        km.interrupt_kernel()
        content = shell_reply(kc, msg_id, 30)
        assert content["status"] == "error" and content["ename"] == "KeyboardInterrupt", content
        seen = []
        msg_id = kc.execute("try:\n    while true:\n        n = n + 1\nexcept KeyboardInterrupt:\n    print('stopped')\n")
        time.sleep(1.0)
        km.interrupt_kernel()
        content = shell_reply(kc, msg_id, 30)
        assert content["status"] == "ok", content
        while True:
            m = kc.get_iopub_msg(timeout=10)
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            seen.append(m)
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                break
        text = "".join(m["content"].get("text", "") for m in seen if m["msg_type"] == "stream")
        assert text == "stopped\n", seen
        print("ok: except Error lets KeyboardInterrupt through; except KeyboardInterrupt catches it")

        # 4. Malformed messages (bad signature, missing frames, signed JSON
        # junk) are skipped; the kernel keeps answering.
        import zmq

        info = km.get_connection_info()
        raw = zmq.Context.instance().socket(zmq.DEALER)
        raw.linger = 0
        raw.connect(f"tcp://{info['ip']}:{info['shell_port']}")
        raw.send_multipart([b"garbage"])
        raw.send_multipart([b"<IDS|MSG>"])
        raw.send_multipart([b"<IDS|MSG>", b"00" * 32, b"{}", b"{}", b"{}", b"{}"])
        header = json.dumps(kc.session.msg_header("execute_request"), default=str).encode()
        parts = [header, b"{}", b"{}", b"{not json"]
        raw.send_multipart([b"<IDS|MSG>", kc.session.sign(parts)] + parts)
        time.sleep(0.5)
        raw.close()
        info_reply = shell_reply(kc, kc.kernel_info(), 10)
        assert info_reply["language_info"]["name"] == "apsi", info_reply
        content, _ = run(kc, "n > 0")
        assert content["status"] == "ok", content
        print("ok: malformed messages are skipped; the kernel goes on")

        # The heartbeat answered all along.
        assert kc.is_alive()
    finally:
        proc = getattr(km.provisioner, "process", None)
        kc.stop_channels()
        km.shutdown_kernel(now=False)
    assert not km.is_alive()
    # Ended by itself (status 0), not killed after the shutdown timeout.
    assert proc is not None and proc.poll() == 0, proc and proc.poll()
    print("ok: shutdown_request ends the kernel (exit status 0)")


if __name__ == "__main__":
    check_notebook(sys.argv[1])
    check_interrupt()
    print("all kernel checks passed")
