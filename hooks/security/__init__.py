"""The built site's protections: a per-page Content-Security-Policy with hashed inline scripts.

`policy` says what is allowed, `inline_scripts` finds what each page runs inline, `page_meta` puts the
policy inside each page (every host enforces it), `headers_file` writes the `_headers` file a static
host reads (for what only a header can carry). `hooks/headers_hook.py` wires them into MkDocs.
"""
