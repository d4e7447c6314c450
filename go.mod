module github.com/agentmcp/agentmcp

go 1.26.0

require (
	github.com/go-jose/go-jose/v4 v4.1.9
	github.com/google/go-cmp v0.7.0
	github.com/sashabaranov/go-openai v1.43.0
	golang.org/x/time v0.16.0
)

require github.com/prometheus/client_golang v1.23.2 // indirect
