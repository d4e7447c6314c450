// Package transcript replays recorded MCP exchanges against a carrier and
// compares what the server wrote with what the transcript expects. It is the
// reference of the transcript format (docs/SPEC.md §11, version
// [FormatVersion]). This repository's transcripts live in
// testdata/transcripts/ at the module root; every carrier runs the same
// files through its own [Carrier] binding.
//
// A host with its own session replays its own transcripts over this
// repository's carriers ([Stdio], [Loopback]) or a carrier of its own:
//
//	func TestTranscripts(t *testing.T) {
//		opts := transcript.Options{Session: func(testing.TB) ports.Session { return newSession() }}
//		transcript.Run(t, transcript.Stdio{Engine: engine.Options{Name: "mine", Version: "1.0.0"}}, "testdata/*.txt", opts)
//	}
//
// # Format
//
// A transcript is a small txtar-like text file:
//
//	Prose saying what the transcript pins and why.
//	rows: spec3-unknown-tool K5
//	-- client --
//	{"jsonrpc":"2.0","id":1,"method":"tools/list"}
//	#wait 1
//	-- server --
//	{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}
//
// Everything before the first section marker is the comment. Within it these
// header lines have a meaning (one key per line, values separated by spaces,
// a key may repeat):
//
//	format: N         the format version the file is written in; a runner
//	                  refuses a version it does not read (default: 1)
//	rows: ID...       docs/SPEC.md rows and wire cases (K1…) the transcript pins;
//	                  a test checks every row of the coverage table has one
//	ignore: PATH...   members removed from every message, expected and actual,
//	                  before comparing: dot-separated member names, "*" for
//	                  every array element (e.g. result._meta, error.data);
//	                  a path that meets a string holding a JSON object or
//	                  array goes on inside it (result.content.*.text.duration
//	                  drops an envelope's duration), and the decoded value is
//	                  compared in the string's place
//	carriers: NAME... only these carriers run it (default: all)
//	bug: TEXT         a known server bug this transcript catches; a failure
//	                  message quotes it (see transcript/BUGS.md)
//	ask-client: on    the carrier serves with its AskClient option on (docs/SPEC.md
//	                  §6); "off" or no header leaves it off, its default
//	conversations: on the built-in session keeps named conversations
//	                  (ports.ConversationSession, docs/SPEC.md §2, §9): each
//	                  successful turn is reported, numbered per conversation
//	features: on      the built-in session also serves fixed resources,
//	                  prompts and completion (internal/fake's Features,
//	                  docs/SPEC.md §2); "off" or no header: tools only
//
// A section starts with a line "-- NAME --". Exactly two sections exist,
// "client" then "server"; unknown or repeated sections are errors.
//
// # The client section
//
// Steps, in order. A line that does not start with '#' is sent verbatim
// followed by "\n" (it need not be JSON: "hello" is sent as is). Blank lines
// are skipped, so that a transcript can breathe; a line starting with "# "
// (or a lone "#") is a comment. A line may hold requestState references,
// replaced before it is sent (not in #raw):
//
//	{{state ID}}          the result.requestState of the response with id ID
//	                      that the latest preceding #wait ID consumed (a parse
//	                      error without one); the run fails unless it is a
//	                      token as docs/SPEC.md §6 mints them: 32 bytes, unpadded
//	                      base64url, 43 characters
//	{{state ID tampered}} the same token with its first character changed
//	                      (still well-formed, never minted)
//
// so a client can retry an input-required round with the server's random
// token: "requestState":"{{state 1}}". {{task ID}} and {{task ID tampered}}
// do the same with the result.taskId of a CreateTaskResult (result.task.taskId
// on 2025-11-25; docs/SPEC.md §14), so a client can poll the task the server
// created. Every other line starting with '#'
// is a directive:
//
//	#raw "GO-STRING"        send exactly these bytes (strconv.Quote syntax, no
//	                        newline added): empty lines, CRLF, a line starting
//	                        with '#', bytes without a newline
//	#fill SIZE CHAR         send SIZE bytes of CHAR then "\n", generated, never
//	                        stored; SIZE is N, NKiB or NMiB with an optional
//	                        +N or -N (e.g. 64MiB, 4MiB+1)
//	#repeat N LINE          the step LINE N times; "{{n}}" in it becomes 1…N
//	#wait ID                wait until one more server message with this id
//	                        (its JSON text, e.g. 7 or "a") has arrived than
//	                        earlier #wait ID steps consumed
//	#wait-idless            the same for messages without an id (errors
//	                        without id, notifications, batch arrays)
//	#wait-started NAME [N]  wait until the session has started N more calls
//	                        (default 1) of tool NAME ("submit" for Submit)
//	#wait-ended NAME [N]    wait until N more calls of NAME have returned
//	#wait-request METHOD    wait until one more server-to-client request
//	                        METHOD has arrived than earlier #wait-request
//	                        METHOD steps consumed (it is not answered)
//	#release                end every blocked slow call successfully (once)
//	#set-tools JSON         replace the session's runtime catalog (a JSON array
//	                        of {name, description, inputSchema}, each with an
//	                        optional execution.taskSupport, as a 2025-11-25
//	                        tools/list shows it)
//	#answer METHOD JSON     wait for a server-to-client request METHOD not yet
//	                        answered and send {"jsonrpc":"2.0","id":<its id>,
//	                        "result":JSON}
//	#answer-error METHOD JSON  the same, answering with {"jsonrpc":"2.0",
//	                        "id":<its id>,"error":JSON} (JSON an object)
//	#poll-task ID STATUS    send tasks/get (2026-07-28) for the task whose id
//	                        the response with id ID minted ({{task ID}}),
//	                        under ids "poll-1", "poll-2"…, until its status
//	                        is STATUS, as a tasks client polls; the answers
//	                        to these requests are left out of the comparison
//	#update URI [unheld]    report a change of resource URI to the built-in
//	                        session's subscriptions (features: on), as a file
//	                        changing under a watch would; with "unheld" the run
//	                        fails if any subscription holds URI (nothing may
//	                        deliver it)
//	#close                  close the client's output (stdin on stdio); it is
//	                        also closed after the last step
//
// # The server section
//
// The messages the server must write, as JSON texts (one per line when
// written by -update, but any layout decodes), plus directives:
//
//	#absent ID     no message with this id may be written, ever (cancellation)
//	#calls NAME... the session received exactly these calls, in any order
//	               ("#calls" alone: none); "submit" stands for Submit
//	# text         a comment
//
// An expected message may hold the string "{{requestState}}" where the
// server mints a token ([TokenPlaceholder]): it matches any 43-character
// base64url encoding of 32 bytes, and every token it matches in one run must
// be distinct (each round gets a fresh one). Anything else in its place is a
// difference. (ignore: result.requestState would drop the member instead,
// unchecked.) "{{taskId}}" matches any task id of the same shape (one id
// recurs in every answer about its task) and "{{time}}" any RFC 3339
// timestamp (createdAt, lastUpdatedAt); -update writes the three
// placeholders, never a random value.
//
// # Matching
//
// After the client section the client's output is closed and the runner
// waits for the server to end (Wait must return nil) and for its output to
// end. Then:
//
//   - every server message must be one compact JSON-RPC message or batch
//     answer ([CheckServerFrame]; on stdio: one per line, nothing else);
//   - messages with an id are matched by id, in any order; messages sharing an
//     id keep their relative order. Ids are compared by their JSON text, so an
//     id must be echoed byte for byte (1 is not 1.0, "a" is not "\u0061");
//   - messages without an id (errors without id, notifications, batch
//     arrays) are matched in order relative to each other;
//   - each pair is compared as JSON values with [cmp.Diff] (numbers by their
//     text), after removing the ignore paths; a missing or extra message fails.
//
// # Updating
//
// go test ./transcript/ -update rewrites the server section of each
// transcript whose output differs: #absent lines are kept, messages follow in
// arrival order except that each run of consecutive messages with ids is
// sorted by the client step that sent the id, so concurrent answers do not
// churn, every minted requestState is written as "{{requestState}}", and a
// #calls line present before is refreshed. Transcripts that pass
// are not rewritten, and neither are transcripts with a bug: header: they
// hold docs/SPEC.md's answer, not the server's.
//
// # Session and carriers
//
// Unless [Options.Session] gives a host's own, every transcript runs against
// a fresh built-in test session (tools echo, fail, boom, slow, progress,
// write, which asks permission and succeeds only when allowed once, panic,
// which panics, and compose, which asks, turns itself into a task and asks
// again; prompts "refuse", "fail", "slow", "panic", "progress" (progress 1..3
// of 3, then "progressed"), and "background", whose background agent
// "indexer" asks permission through the turn's Caller); this
// repository's tests name it agentmcp-test 1.2.3. A carrier is bound by
// implementing [Carrier]; [Carrier.Connect] receives the transcript's
// [Config] (AskClient from the ask-client: header) and must serve with it.
// [Stdio] (a real stdio.Transport over io.Pipes) and [Loopback] (one POST
// per client line, [NewHTTPConn]) bind this repository's carriers; both end
// each transcript by shutting their engine down and fail it unless the
// engine then holds no call (engine.Stats is zero: no parked round, task or
// request name left behind). A stream carrier of one's own returns a
// [StreamConn], an HTTP one [NewHTTPConn] with its credential.
// stdio_test.go owns the -update flag:
//
//	go test ./transcript/ -run TestTranscriptsStdio [-update]
//	go test ./adapters/httploopback/ -run TestTranscriptsHTTP
//
// # Synchronisation
//
// The runner never sleeps: it waits for the session's Started channel, for
// calls to return and for responses. Each transcript is bounded by a timeout
// that only guards against a hang. A carrier binding may run each transcript
// in a testing/synctest bubble ([Options.Bubble]): time is then fake (the
// 5 s drain at the end of input passes at once when everything is blocked),
// and the bubble's end proves that no goroutine outlived the server.
//
// [cmp.Diff]: https://pkg.go.dev/github.com/google/go-cmp/cmp#Diff
package transcript
