module example.com/mysession

go 1.26.0

require github.com/agentmcp/agentmcp v0.0.0

require (
	github.com/google/go-cmp v0.7.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)

replace github.com/agentmcp/agentmcp => ../..
