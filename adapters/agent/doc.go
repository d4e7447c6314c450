// Package agent is the reference agent behind agent_submit (docs/SPEC.md
// §9): a [ports.Session] decorator that runs each submission as a turn of a
// model loop over another session's tools.
//
// [New] wraps an inner session (the CLI's workspace) and a [ports.Model].
// RuntimeTools and InvokeTool are the inner session's; Submit runs one turn:
//
//  1. the prompt joins the caller's conversation (the one the submission
//     names, of the caller's own, below);
//  2. model step: the system prompt, the conversation and the inner
//     session's runtime tools go to the model, which answers text and/or tool
//     calls;
//  3. each tool call runs through the inner session's InvokeTool with the
//     submission's own [ports.Caller], exactly as an MCP client's own
//     tools/call would: the same tools, the same permission wrapper, so
//     write_file asks whoever drives this agent_submit (docs/SPEC.md §6);
//  4. the results go back to the model, and so on, until the model answers
//     without tool calls: that text is the turn's response.
//
// Why a decorator, in its own package: the loop is not a property of any one
// session, so it sits in front of one and depends only on the ports (the
// Session it wraps and the Model it drives), never on the workspace or on a
// model provider; the composition root (app) picks both. The same wrapper
// serves any session, and another provider is one more Model adapter.
//
// # Busy rules
//
// One turn per conversation (a principal and a name): a submission made
// while that conversation's turn computes is refused with [ErrBusy]; one
// made while it waits on a prompt supersedes it (below); turns of other
// conversations and other principals run beside it, at most [Options.MaxTurns] at once (default 4; beyond it a busy
// refusal that says how many run). A client's own tool calls are never
// refused because turns run: the workspace's calls are safe side by side (a
// write is approved by itself and lands where it was approved), so nothing
// one client leaves running blocks another's tools. A submission whose ctx
// ended before its turn started is refused. A turn of the same conversation
// that was cancelled (or ran out of time) but is still ending is waited
// for, up to [WindDown], rather than refused, so a client that cancels a
// turn and submits again at once is served; so is one whose cancellation
// arrives up to [CancelGrace] after its submission (two HTTP requests sent
// at once), which is what a busy refusal waits before it is given.
//
// A prompt a turn's tool raises (a permission, a question) waits at most
// [Options.ApprovalTimeout] (default 5 minutes), not the turn's 30 minutes
// nor the carrier's round lifetime: unanswered, it settles closed and the
// turn stops after that call (the rest of its step not run) with a
// response that says so, reporting [ports.StopPromptUnanswered].
//
// # Supersede
//
// A new submission of a conversation whose turn waits on a prompt ends that
// prompt at once, as the approval timeout would: the call is denied, the
// turn stops after it with a response that says a new prompt came
// ([ports.StopSuperseded]), its work joins the conversation, and the new
// turn runs from there. A person who submits again to the same
// conversation has moved on; two clients that want separate work name
// separate conversations (docs/SPEC.md §9 says why this reverses the
// earlier rule).
//
// # Conversations
//
// Each principal ([ports.Caller.Principal]: the zero value on local
// carriers, issuer + subject + client on the remote host) has
// conversations of its own on [Options.Root], each named
// ([ports.Submission.Conversation]; "" is [domain.DefaultConversation]),
// so no principal ever sees, continues or forks another's history. A fork
// ([ports.Submission.ForkFrom]) starts a new conversation from another's
// turns. A principal holds at most [Options.MaxConversationsPerPrincipal]
// conversations; a bad name, an impossible fork and one conversation past
// the bound are refusals decided before the turn runs. Each finished turn
// reports itself ([ports.TurnReport]) and keeps a unified diff of each file
// its tools changed, which the inner session reports to the turn's Caller
// ([ports.ChangeReporter]): the agent never reads the workspace itself. Conversations live in a [ports.ConversationStore]
// ([Options.Store]; by default in memory, at most
// [Options.MaxConversations], the least recently updated dropped first): a
// turn starts from what the store has committed, and its messages are
// appended in one transaction when it ends, so a durable store carries a
// conversation across restarts and between processes serving one root. A
// conversation keeps the messages of finished turns, newest last, within
// [Options.HistoryBytes]: a finished turn is first bounded to it (boundTurn:
// its tool results and arguments become short notes, oldest first; if that
// is not enough only its prompt and response stay, each cut), and that
// bounded turn is what the store appends; then the store drops the oldest
// whole turns until the rest fit, counted the same way. The system prompt
// is not part of the history and is sent every step.
//
// A turn joins its conversation only when it ends with a response. A turn
// that fails (the endpoint is down, the key is refused, the turn times out,
// the store cannot load or keep it) or is cancelled leaves the conversation
// exactly as it was before its prompt, so the next request never carries a
// tool call without its result and the next turn starts clean.
//
// # Bounds
//
//   - at most [Options.MaxSteps] model steps per turn (default 32); reaching
//     it ends the turn with a response that says so;
//   - at most [Options.MaxToolCallsPerStep] tool calls run per step (default
//     16); only those are kept in the turn, the rest become one note, so
//     what a step keeps does not grow with what the model wrote;
//   - each tool result is cut to [Options.MaxToolResultBytes] (default 64 KiB)
//     before the model sees it, with a note saying so;
//   - what the turn keeps and sends again with each step is bounded by
//     [Options.TurnBytes] (default 2 MiB): beyond it the oldest results and
//     arguments of the turn become short notes (the prompt stays whole);
//   - the whole turn is bounded by [Options.TurnTimeout] (default 30
//     minutes), each prompt of its tools by [Options.ApprovalTimeout]; each
//     model request has its own timeout and answer size (8 MiB) in the model
//     adapter.
//
// So a turn holds at most one model answer, its TurnBytes and one step's
// results at a time, whatever the endpoint streams.
//
// # Bad model output
//
// A call of an unknown tool, arguments that are not a JSON object or that
// the tool refuses, and an answer without choices each become an error the
// model reads (a failed execution envelope, or a user-role note for an empty
// answer); the turn goes on. Nothing the model writes can crash the session
// or make a turn outlive its bounds.
//
// # Progress
//
// Through the submission's Caller (notifications/progress when the client
// sent a progressToken): one report per model step ("model step 2") and per
// tool call ("calling read_file"), the tools' own reports relabelled onto
// the same increasing counter, a heartbeat every [Options.Heartbeat]
// (default 5 s, at most 10 s) while the model works, and, while it streams
// text, that text: "model step 2: …" and the newest text on one line, at
// most [MaxProgressText] characters, at most one report per
// [Options.TextInterval] (default 500 ms), so a person watching sees the
// answer being written. The final answer is the response, unchanged.
//
// # Logging
//
// Counts, durations, tool names, the model's name and the endpoint, token
// usage when the endpoint reports it, refusals and unanswered prompts with
// their reasons: never a prompt, a tool's arguments or result, a response,
// or a principal. A failed turn logs its error's log form
// ([log/slog.LogValuer], which the model adapter gives without the
// endpoint's own words: a validation error may quote the prompt), else its
// kind only.
package agent
