// Command e2eparts runs, for e2e/replicas.sh, the real parts beside
// agentmcp that have no Debian or npm package of their own: a PostgreSQL
// cluster of internal/pgtest (Debian's server binaries, a temporary
// directory, a private socket directory, a free 127.0.0.1 port; as the
// postgres user under root) and a scripted OpenAI-compatible model of
// internal/chatscript on 127.0.0.1.
//
//	e2eparts postgres   prints "URL PASSWORD" (a database made for the test)
//	e2eparts model      prints the model's base URL
//
// Each prints its one line once ready, then runs until it gets SIGTERM or
// SIGINT (or, when its stdin is a pipe, until that closes), and then stops
// (the cluster removed).
//
// The model answers by the last user prompt of each request, so a
// scripted session can tell what the agent was sent:
//
//	remember TEXT   "noted"
//	recall          "you said: " and every earlier user prompt of the conversation, joined by " | "
//	write PATH TEXT a write_file call of PATH with TEXT, then, given its result, "done: " and the result
//	slow            holds its answer until the request is cancelled (the turn's end)
//	anything else   "echo: " and the prompt
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/agentmcp/agentmcp/internal/chatscript"
	"github.com/agentmcp/agentmcp/internal/pgtest"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: e2eparts postgres|model")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "postgres":
		c, err := pgtest.Run()
		if err != nil {
			fail(err)
		}
		defer c.Close()
		db, err := c.NewDatabase()
		if err != nil {
			fail(err)
		}
		fmt.Println(c.URL(db), c.Password)
		wait()
	case "model":
		s := chatscript.Serve(answer)
		defer s.Close()
		fmt.Println(s.URL)
		wait()
	default:
		fmt.Fprintln(os.Stderr, "usage: e2eparts postgres|model")
		os.Exit(2)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "e2eparts:", err)
	os.Exit(1)
}

// wait returns once a stop signal comes, or a stdin pipe closes.
func wait() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	closed := make(chan struct{})
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
		go func() { io.Copy(io.Discard, os.Stdin); close(closed) }()
	}
	select {
	case <-closed:
	case <-ctx.Done():
	}
}

func answer(r *chatscript.Request) chatscript.Reply {
	if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == "tool" {
		return chatscript.Reply{Text: "done: " + r.Messages[n-1].Content}
	}
	prompt := r.LastUser()
	word, rest, _ := strings.Cut(prompt, " ")
	switch word {
	case "remember":
		return chatscript.Reply{Text: "noted"}
	case "recall":
		prompts := r.UserPrompts()
		return chatscript.Reply{Text: "you said: " + strings.Join(prompts[:len(prompts)-1], " | ")}
	case "write":
		path, text, _ := strings.Cut(rest, " ")
		args, _ := json.Marshal(map[string]string{"path": path, "content": text})
		return chatscript.Reply{Calls: []chatscript.Call{{ID: "call-1", Name: "write_file", Arguments: string(args)}}}
	case "slow":
		return chatscript.Reply{Text: "slow at last", Mid: func(ctx context.Context) { <-ctx.Done() }}
	}
	return chatscript.Reply{Text: "echo: " + prompt}
}
