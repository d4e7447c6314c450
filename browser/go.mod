module github.com/agentmcp/agentmcp/browser

go 1.26.0

require (
	github.com/agentmcp/agentmcp v0.0.0
	github.com/chromedp/cdproto v0.160.1
	github.com/chromedp/chromedp v0.23.1
)

require github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect

// The binary, the scripted model and the test proxy are the repository's own.
replace github.com/agentmcp/agentmcp => ../
