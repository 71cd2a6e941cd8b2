"""New pages for the browser tests, each opened in a browser context that is kept warm for the session.

A page whose site has no other page open in its context starts a renderer process of its own. On this 2-core
machine that cost about 0.7 CPU-seconds a visit (a chapter loaded in a new context: 1.2-1.4 CPU-seconds; in a
kept one, as below: 0.5-0.6), and the suite makes a few hundred visits. So each set of context options (viewport,
palette, JavaScript, a phone's screen, ...) gets one context per site for the whole session, with a page left open
on that site (a picture: no script runs in it), and every new page of the site joins that page's renderer
process. A context whose kept page is gone (its renderer crashed, say) is replaced.

Nothing else is shared between visits: each one still gets a new page (its own listeners, init scripts and
routes), starts with empty caches, as a first-time reader's browser does (the context's HTTP cache and the
renderer's in-memory cache are emptied before each new page; within the visit they work, so what the site asks
browsers to keep is kept), and finds the site's storage empty (Material keeps the palette a reader picked in
localStorage).
"""

from __future__ import annotations

import contextlib
import json
from urllib.parse import urlsplit

# A file of the built site with no script: the page that keeps the site's renderer process alive.
KEEPER_PATH = "/assets/images/favicon.png"


class WarmPages:
    def __init__(self, browser) -> None:
        self._browser = browser
        self._contexts: dict[tuple[str, str], tuple[object, object, object]] = {}

    def new_page(self, url: str, **options):
        """A new page in the kept context for url's site and these `browser.new_context` options (not yet
        navigated: set listeners and init scripts, then `page.goto(url)`)."""
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        key = (origin, json.dumps(options, sort_keys=True))
        try:
            return self._fresh_page(key, options)
        except Exception:  # the kept page or its process is gone: start the context again, once
            kept = self._contexts.pop(key, None)
            if kept is None:  # it was being made: nothing kept to replace, so the error is the answer
                raise
            with contextlib.suppress(Exception):
                kept[0].close()
            return self._fresh_page(key, options)

    def _fresh_page(self, key: tuple[str, str], options: dict):
        if key not in self._contexts:
            context = self._browser.new_context(**options)
            keeper = context.new_page()
            keeper.goto(key[0] + KEEPER_PATH)
            session = context.new_cdp_session(keeper)
            session.send("Network.enable")  # the cache commands below act only with the domain on
            self._contexts[key] = (context, keeper, session)
        context, keeper, session = self._contexts[key]
        session.send("Network.clearBrowserCache")  # the context's HTTP cache
        # Turning the cache off empties the renderer process's in-memory cache (Blink evicts it); back on at once.
        session.send("Network.setCacheDisabled", {"cacheDisabled": True})
        session.send("Network.setCacheDisabled", {"cacheDisabled": False})
        if options.get("java_script_enabled", True):  # without JavaScript no page can have stored anything
            keeper.evaluate("() => { localStorage.clear(); }")
        return context.new_page()

    def close(self) -> None:
        for context, _, _ in self._contexts.values():
            context.close()
        self._contexts.clear()
