"""Response headers for the built site: a per-page Content-Security-Policy with hashed inline scripts.

`policy` says what is allowed, `inline_scripts` finds what each page runs inline, `headers_file`
writes the `_headers` file a static host reads. `hooks/headers_hook.py` wires them into MkDocs.
"""
