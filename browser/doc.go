// Package browser is the turn view's browser test (docs/SPEC.md §2 "The
// turn view"), a module of its own so that the main module never depends
// on chromedp: Debian's chromium, headless, driven by chromedp, loads a
// host page built on the MCP Apps extension's own host side (AppBridge)
// that renders the view of a real agentmcp serve http --ask-client turn,
// driven by a scripted OpenAI-compatible model on 127.0.0.1. Run it with
// bash scripts/test.sh (its last step), or here with go test ./... once
// web/'s npm packages are installed (npm ci in web/) and chromium is on
// PATH.
package browser
