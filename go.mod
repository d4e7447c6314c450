module github.com/agentmcp/agentmcp

go 1.26.0

require (
	github.com/bmatcuk/doublestar/v4 v4.10.4
	github.com/go-jose/go-jose/v4 v4.1.9
	github.com/google/go-cmp v0.7.0
	github.com/landlock-lsm/go-landlock v0.11.2
	github.com/sashabaranov/go-openai v1.43.0
	golang.org/x/sys v0.49.0
	golang.org/x/time v0.16.0
)

require kernel.org/pub/linux/libs/security/libcap/psx v1.2.78 // indirect
