package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram"
)

func (a *app) keyCmd() *cobra.Command {
	key := &cobra.Command{Use: "key", Short: "Create, list, rotate and revoke API keys"}
	var spec postgram.KeySpec
	var name, scopes, types, vis, visibility, expiresIn string
	create := &cobra.Command{
		Use:   "create (NAME | --name NAME)",
		Short: "Create an API key (the key is printed once and never stored)",
		Example: `  pgm-admin key create --name local --scopes read,write,delete --visibility personal,work,shared
  pgm-admin key create ci --scopes read --types memory,document --expires-in 90d`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 1 && name != "" && name != args[0]:
				return usageError{fmt.Sprintf("the key's name is given twice, %q and --name %q: give one", args[0], name)}
			case len(args) == 1:
				name = args[0]
			case name == "":
				return usageError{"the key needs a name: pgm-admin key create NAME (or --name NAME)"}
			}
			if vis != "" && visibility != "" && vis != visibility {
				return usageError{"--visibility and --visibilities are the same flag: give one"}
			}
			if vis == "" {
				vis = visibility
			}
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			spec.Name = name
			spec.Scopes = splitScopes(scopes)
			for _, t := range splitList(types) {
				spec.AllowedTypes = append(spec.AllowedTypes, postgram.EntityType(t))
			}
			for _, v := range splitList(vis) {
				spec.AllowedVisibilities = append(spec.AllowedVisibilities, postgram.Visibility(v))
			}
			if expiresIn != "" {
				d, err := parseLifetime("--expires-in", expiresIn)
				if err != nil {
					return err
				}
				spec.ExpiresAt = time.Now().Add(d)
			}
			token, k, err := a.admin.CreateKey(cmd.Context(), spec)
			if err != nil {
				return err
			}
			if a.json {
				return json.NewEncoder(a.stdout).Encode(map[string]any{"key": token, "api_key": k})
			}
			fmt.Fprintf(a.stdout, "%s\n", token)
			fmt.Fprintf(a.stderr, "Created key %s (%s) for client %q with scopes %s, %s.\nStore it now: it is shown once and cannot be recovered.\n",
				k.ID, k.Name, k.ClientID, joinScopes(k.Scopes), expiryPhrase(k.ExpiresAt))
			return nil
		},
	}
	create.Flags().StringVar(&scopes, "scopes", "read,write", "comma-separated scopes: read, write, delete, sync, backup (or all)")
	create.Flags().StringVar(&types, "types", "", "comma-separated entity types the key may use (default all)")
	create.Flags().StringVar(&name, "name", "", "the key's name (or give it as the argument)")
	create.Flags().StringVar(&vis, "visibilities", "", "comma-separated visibilities the key may use (default all)")
	create.Flags().StringVar(&visibility, "visibility", "", "the same as --visibilities (the reference CLI's name)")
	create.Flags().StringVar(&spec.ClientID, "client-id", "", "client id for session-context scoping (default: the key's name)")
	create.Flags().StringVar(&expiresIn, "expires-in", "", "the key stops working after this long: 90d, 12h, 2w, 1h30m (default: never)")

	list := &cobra.Command{
		Use:   "list",
		Short: "List API keys",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			keys, err := a.admin.ListKeys(cmd.Context())
			if err != nil {
				return err
			}
			if a.json {
				return json.NewEncoder(a.stdout).Encode(map[string]any{"keys": keys})
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tPREFIX\tSCOPES\tCLIENT\tCREATED\tLAST USED\tEXPIRES\tREVOKED")
			for _, k := range keys {
				fmt.Fprintf(tw, "%s\t%s\t%s…\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Prefix, joinScopes(k.Scopes), k.ClientID,
					k.CreatedAt.Format(time.RFC3339), fmtTime(k.LastUsedAt), fmtTime(k.ExpiresAt), fmtTime(k.RevokedAt))
			}
			return tw.Flush()
		},
	}
	var yes, dry bool
	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke an API key (every server refuses it on its next request)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := postgram.ParseID("id", args[0])
			if err != nil {
				return err
			}
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			if dry || !yes {
				fmt.Fprintf(a.stdout, "would revoke key %s", id)
				if !yes && !dry {
					fmt.Fprint(a.stdout, " (pass --yes to do it)")
				}
				fmt.Fprintln(a.stdout)
				if !dry {
					return usageError{"revoke needs --yes"}
				}
				return nil
			}
			if err := a.admin.RevokeKey(cmd.Context(), id); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "revoked key %s\n", id)
			return nil
		},
	}
	revoke.Flags().BoolVar(&yes, "yes", false, "really revoke")
	revoke.Flags().BoolVar(&dry, "dry-run", false, "show what would be revoked")
	key.AddCommand(create, list, revoke, a.keyRotateCmd())
	return key
}

// keyRotateCmd is "key rotate ID [--overlap 24h] [--expires-in D]".
func (a *app) keyRotateCmd() *cobra.Command {
	var overlap, expiresIn string
	var yes, dry bool
	rotate := &cobra.Command{
		Use:   "rotate ID",
		Short: "Issue a successor of a key with the same rights; the old key expires at the end of the overlap",
		Long: `rotate issues a new key with the old key's name, scopes, allowed types and
visibilities and client id, prints it once, and makes the old key expire at
the end of the overlap window (default 24h), so that clients can switch
without an outage. Every server sees the old key's new expiry at once.

The successor keeps the old key's lifetime (from now) when the old key had
an expiry, or takes --expires-in. --overlap 0 ends the old key at once and
then needs --yes.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := postgram.ParseID("id", args[0])
			if err != nil {
				return err
			}
			var opts postgram.RotateOptions
			if opts.Overlap, err = parseLifetime("--overlap", overlap); err != nil {
				return err
			}
			if expiresIn != "" {
				d, err := parseLifetime("--expires-in", expiresIn)
				if err != nil {
					return err
				}
				opts.ExpiresAt = time.Now().Add(d)
			}
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			if dry || (opts.Overlap == 0 && !yes) {
				fmt.Fprintf(a.stdout, "would issue a successor of key %s and end the old key %s\n", id, overlapPhrase(opts.Overlap))
				if !dry {
					return usageError{"rotate with --overlap 0 ends the old key at once: pass --yes"}
				}
				return nil
			}
			rot, err := a.admin.RotateKey(cmd.Context(), id, opts)
			if err != nil {
				return err
			}
			if a.json {
				return json.NewEncoder(a.stdout).Encode(rot)
			}
			fmt.Fprintf(a.stdout, "%s\n", rot.Token)
			fmt.Fprintf(a.stderr, "Created key %s (%s), the successor of %s, for client %q with scopes %s, %s.\n"+
				"The old key stops working at %s.\nStore the new key now: it is shown once and cannot be recovered.\n",
				rot.Key.ID, rot.Key.Name, id, rot.Key.ClientID, joinScopes(rot.Key.Scopes), expiryPhrase(rot.Key.ExpiresAt),
				fmtTime(rot.Previous.ExpiresAt))
			return nil
		},
	}
	rotate.Flags().StringVar(&overlap, "overlap", "24h", "how long the old key keeps working beside the new one: 24h, 7d, 0")
	rotate.Flags().StringVar(&expiresIn, "expires-in", "", "the new key's lifetime: 90d, 12h (default: the old key's lifetime, or never)")
	rotate.Flags().BoolVar(&yes, "yes", false, "confirm --overlap 0 (the old key stops at once)")
	rotate.Flags().BoolVar(&dry, "dry-run", false, "show what would be done")
	return rotate
}

// parseLifetime reads a duration such as 90d, 2w, 36h, 1h30m or 0: Go's
// duration syntax plus whole days (d) and weeks (w).
func parseLifetime(flag, s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	bad := usageError{fmt.Sprintf("%s: %q is not a duration such as 90d, 2w, 36h or 1h30m", flag, s)}
	if s == "" {
		return 0, bad
	}
	unit := time.Duration(0)
	switch s[len(s)-1] {
	case 'd':
		unit = 24 * time.Hour
	case 'w':
		unit = 7 * 24 * time.Hour
	}
	if unit != 0 {
		n, err := strconv.Atoi(s[:len(s)-1])
		if err != nil || n < 0 || n > 3660 {
			return 0, bad
		}
		return time.Duration(n) * unit, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, bad
	}
	return d, nil
}

func expiryPhrase(t *time.Time) string {
	if t == nil {
		return "never expiring"
	}
	return "expiring at " + t.UTC().Format(time.RFC3339)
}

func overlapPhrase(d time.Duration) string {
	if d == 0 {
		return "at once"
	}
	return "after " + d.String()
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func splitScopes(s string) []postgram.Scope {
	if strings.TrimSpace(s) == "all" {
		return postgram.AllScopes
	}
	var out []postgram.Scope
	for _, p := range splitList(s) {
		out = append(out, postgram.Scope(p))
	}
	return out
}

func joinScopes(s []postgram.Scope) string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = string(x)
	}
	return strings.Join(parts, ",")
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
