"""What the tests and the benchmarks both drive the site with, in one place both import.

- `chromium`: the browser (Debian's Chromium, or `PD_CHROMIUM`) and the flags every launch passes;
- `static_server`: a built site served on 127.0.0.1 as a static host serves it, with or without `_headers`;
- `mkdocs_serve`: `mkdocs serve` of a copy of the project, and the edit an author makes to a chapter;
- `pages`: a built site's pages, and a reader's pass through one (the first gesture, every demo drawn, the
  network quiet).

It imports nothing else of the project and works on the checkout it is installed from (`.ci/setup` installs it
editable): the tests (`tests/`) and the benchmarks (`python -m benchmarks.<script>`) are its clients.
"""
