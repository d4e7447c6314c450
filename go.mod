module github.com/agentmcp/agentmcp

go 1.26
