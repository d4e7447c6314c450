package app

import "github.com/agentmcp/agentmcp/internal/secretenv"

// SecretVariables are the environment variables the serve commands read a
// secret from: OPENAI_API_KEY, the model endpoint's key, and PGPASSWORD,
// the password of a PostgreSQL --store. A serve process keeps them out of
// its own environment ([KeepSecretsOutOfEnvironment]).
var SecretVariables = []string{"OPENAI_API_KEY", "PGPASSWORD"}

// KeepSecretsOutOfEnvironment, called first in main with the command
// line's arguments (after the program name), re-executes a serve command
// without SecretVariables in its environment, their values passed on a
// pipe (docs/SPEC.md §9 "Secrets"), so that no process of the user can read
// them from /proc/PID/environ. Other commands are left alone (record passes
// its environment on to the server it starts). It returns in the
// re-executed process, and at once when there is nothing to hide; on a
// failure it prints one line and exits 1.
func KeepSecretsOutOfEnvironment(args []string) {
	if len(args) > 0 && args[0] == "serve" {
		secretenv.Reexec(SecretVariables)
	}
}
