package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram/cmd/pgm/internal/api"
	"github.com/postgram-go/postgram/transport/apierror"
)

// exitInterrupted is the status after SIGINT/SIGTERM canceled the command:
// the shell convention 128 + SIGINT. It is the one status outside
// apierror's table, because no server error can cause it.
const exitInterrupted = 130

// exitMeaning describes each exit status; the error codes that map to a
// status come from apierror's table.
var exitMeaning = map[int]string{
	apierror.ExitOK:                     "success",
	apierror.ExitInternal:               "unexpected error or internal server error",
	apierror.ExitUsage:                  "usage error or invalid input",
	apierror.ExitUnreachable:            "server unreachable (connection refused, DNS failure, timeout) or unavailable",
	apierror.Unauthorized.ExitCode():    "unauthorized: missing, unknown or revoked API key (check PGM_API_KEY)",
	apierror.Forbidden.ExitCode():       "forbidden: the API key lacks the scope, entity type or visibility",
	apierror.NotFound.ExitCode():        "not found",
	apierror.Conflict.ExitCode():        "version conflict: re-read the entity and retry with its current version",
	apierror.RateLimited.ExitCode():     "rate limited: retry later",
	apierror.EmbeddingFailed.ExitCode(): "the embedding provider failed",
	exitInterrupted:                     "interrupted (SIGINT or SIGTERM)",
}

// exitCodeLines renders the exit-status table, one line per status, each
// naming the server error codes that lead to it.
func exitCodeLines() []string {
	byExit := map[int][]string{}
	for _, c := range apierror.Codes() {
		byExit[c.ExitCode()] = append(byExit[c.ExitCode()], string(c))
	}
	var statuses []int
	for s := range exitMeaning {
		statuses = append(statuses, s)
	}
	for s := range byExit {
		if _, ok := exitMeaning[s]; !ok {
			statuses = append(statuses, s)
		}
	}
	slices.Sort(statuses)
	lines := make([]string, 0, len(statuses))
	for _, s := range statuses {
		m, ok := exitMeaning[s]
		if !ok {
			m = "server error"
		}
		if codes := byExit[s]; len(codes) > 0 {
			m += " [" + strings.Join(codes, ", ") + "]"
		}
		lines = append(lines, fmt.Sprintf("%-4d %s", s, m))
	}
	return lines
}

// exitCodeHelp is the exit-status section of pgm's long help.
func exitCodeHelp() string {
	return "Exit codes:\n  " + strings.Join(exitCodeLines(), "\n  ")
}

// report prints err as one line on stderr and returns the exit status.
// cmd is the command that ran (or failed to parse).
func (a *app) report(cmd *cobra.Command, err error) int {
	msg, code, usage := a.classify(err)
	if usage && cmd != nil {
		msg += " (see '" + cmd.CommandPath() + " --help')"
	}
	fmt.Fprintln(a.stderr, "error: "+oneLine(msg))
	return code
}

// classify turns err into a message and an exit status; usage reports a
// command-line problem (as opposed to a failure of the request).
func (a *app) classify(err error) (msg string, code int, usage bool) {
	var (
		ue  *usageError
		re  *runError
		ure *api.UnreachableError
		rse *apierror.ResponseError
		pe  *api.ProtocolError
	)
	switch {
	case errors.As(err, &ue):
		return ue.msg, apierror.ExitUsage, true
	case errors.Is(err, context.Canceled):
		return "interrupted", exitInterrupted, false
	case errors.As(err, &ure):
		return ure.Error() + "; is postgram-server running?", apierror.ExitUnreachable, false
	case errors.As(err, &rse):
		return a.responseMessage(rse), rse.Body.Code.ExitCode(), false
	case errors.As(err, &pe):
		return pe.Error(), apierror.ExitInternal, false
	case errors.As(err, &re):
		return err.Error(), apierror.ExitInternal, false
	default:
		// Not from a command's own code: cobra rejected the command line.
		return err.Error(), apierror.ExitUsage, true
	}
}

// responseMessage words a server error for a person, with a hint where
// one helps.
func (a *app) responseMessage(re *apierror.ResponseError) string {
	b := re.Body
	msg := strings.TrimSpace(b.Message)
	if msg == "" {
		msg = strings.ToLower(strings.ReplaceAll(string(b.Code), "_", " "))
	}
	switch b.Code {
	case apierror.Unauthorized:
		hint := "check PGM_API_KEY, --api-key or api_key in ~/.pgmrc"
		if a.cfg != nil && a.cfg.Key == "" {
			hint = "no API key is configured: set PGM_API_KEY, pass --api-key or add api_key to ~/.pgmrc"
		} else if a.cfg != nil {
			hint = "check the API key from " + a.cfg.KeyFrom + "; it may be wrong or revoked"
		}
		return "unauthorized: " + msg + " (hint: " + hint + ")"
	case apierror.Forbidden:
		return "forbidden: " + msg + " (the API key lacks the scope, entity type or visibility this needs)"
	case apierror.NotFound:
		return "not found: " + msg
	case apierror.Conflict:
		id, ver, ok := currentVersion(b.Details)
		if !ok {
			return "conflict: " + msg + " (hint: re-read the entity with 'pgm recall ID' and retry with its current version)"
		}
		if id == "" {
			id = "ID"
		}
		return fmt.Sprintf("conflict: %s (current version: %d; hint: re-read with 'pgm recall %s' and retry with --version %d)", msg, ver, id, ver)
	case apierror.Validation:
		if f, ok := b.Details["field"].(string); ok && f != "" {
			return "invalid input: " + msg + " (field: " + f + ")"
		}
		return "invalid input: " + msg
	case apierror.RateLimited:
		return "rate limited: " + msg + " (retry later)"
	case apierror.EmbeddingFailed:
		return "the embedding provider failed: " + msg
	case apierror.Unavailable:
		return "the server is unavailable: " + msg
	case apierror.Internal:
		return fmt.Sprintf("server error (HTTP %d): %s", re.Status, msg)
	}
	return strings.ToLower(strings.ReplaceAll(string(b.Code), "_", " ")) + ": " + msg
}

// currentVersion reads details.current.{id,version} of a conflict.
func currentVersion(details map[string]any) (string, int64, bool) {
	cur, ok := details["current"].(map[string]any)
	if !ok {
		return "", 0, false
	}
	id, _ := cur["id"].(string)
	switch v := cur["version"].(type) {
	case json.Number:
		n, err := v.Int64()
		return id, n, err == nil
	case float64:
		return id, int64(v), true
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		return id, n, err == nil
	}
	return id, 0, false
}

// oneLine collapses whitespace runs to one space and drops control
// characters, so a message (or a table cell) is one safe terminal line.
func oneLine(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = true
			continue
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}
