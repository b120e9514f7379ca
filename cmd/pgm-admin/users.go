package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/web/password"
)

// userCmd manages the web app's users: the way back in for an operator who
// lost a password or a second factor.
func (a *app) userCmd() *cobra.Command {
	user := &cobra.Command{Use: "user", Short: "List, create and delete web-app users; reset a password or a second factor"}

	list := &cobra.Command{
		Use:   "list",
		Short: "List the web app's users",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			users, err := a.store.ListUsers(cmd.Context())
			if err != nil {
				return err
			}
			if a.json {
				out := make([]map[string]any, 0, len(users))
				for _, u := range users {
					out = append(out, map[string]any{"id": u.ID, "name": u.Name, "role": u.Role, "key_id": u.KeyID,
						"two_factor": u.TOTPSecret != "", "locked_until": u.LockedUntil, "last_login_at": u.LastLoginAt, "created_at": u.CreatedAt})
				}
				return json.NewEncoder(a.stdout).Encode(out)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tROLE\tKEY\t2FA\tLOCKED UNTIL\tLAST SIGN-IN")
			for _, u := range users {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\t%s\n", u.Name, u.Role, dash(u.KeyID), u.TOTPSecret != "", timeOrDash(u.LockedUntil), timeOrDash(u.LastLoginAt))
			}
			return tw.Flush()
		},
	}

	var role, keyID string
	create := &cobra.Command{
		Use:   "create NAME --role admin|member [--key KEY_ID]",
		Short: "Create a user; the password is read from standard input",
		Example: `  printf '%s\n' "$PASSWORD" | pgm-admin user create ada --role admin
  pgm-admin user create rita --role member --key 0b7c... < password.txt`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := strings.TrimSpace(args[0])
			r := driver.UserRole(role)
			switch {
			case name == "":
				return usageError{"the user needs a name"}
			case r != driver.UserAdmin && r != driver.UserMember:
				return usageError{"--role: admin or member"}
			case r == driver.UserMember && keyID == "":
				return usageError{"--key: a member acts with an API key's rights (pgm-admin key list)"}
			case r == driver.UserAdmin && keyID != "":
				return usageError{"--key: only members are bound to a key"}
			}
			if keyID != "" {
				if _, err := uuid.Parse(keyID); err != nil {
					return usageError{"--key: not a key id (pgm-admin key list shows them)"}
				}
			}
			pw, err := a.readPassword()
			if err != nil {
				return err
			}
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			hash, err := password.Hash(password.Params{}, pw)
			if err != nil {
				return err
			}
			u := &driver.User{ID: uuid.New(), Name: name, PasswordHash: hash, Role: r, KeyID: keyID, CreatedAt: time.Now().UTC()}
			if err := a.store.CreateUser(cmd.Context(), u); err != nil {
				return err
			}
			if err := a.admin.RecordAudit(cmd.Context(), nil, "user.create", map[string]any{"user": name, "role": role, "key_id": keyID}); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "Created the %s %s.\n", role, name)
			return nil
		},
	}
	create.Flags().StringVar(&role, "role", "", "admin (every right) or member (an API key's rights)")
	create.Flags().StringVar(&keyID, "key", "", "for a member: the id of the API key whose rights it has")

	var noTOTP bool
	reset := &cobra.Command{
		Use:   "reset-password NAME [--disable-2fa]",
		Short: "Set a user's password (read from standard input), unlock it and end its sessions",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pw, err := a.readPassword()
			if err != nil {
				return err
			}
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			u, err := a.store.UserByName(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if u.PasswordHash, err = password.Hash(password.Params{}, pw); err != nil {
				return err
			}
			if noTOTP {
				u.TOTPSecret, u.Recovery = "", nil
			}
			if err := a.store.UpdateUser(cmd.Context(), u); err != nil {
				return err
			}
			if err := a.store.SetLoginState(cmd.Context(), u.ID, 0, nil, nil); err != nil {
				return err
			}
			n, err := a.store.DeleteUserSessions(cmd.Context(), u.ID)
			if err != nil {
				return err
			}
			if err := a.admin.RecordAudit(cmd.Context(), nil, "user.reset_password", map[string]any{"user": u.Name, "second_factor_removed": noTOTP}); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "Set the password of %s, unlocked it and ended %d session(s)%s.\n", u.Name, n,
				map[bool]string{true: "; two-factor sign-in is off", false: ""}[noTOTP])
			return nil
		},
	}
	reset.Flags().BoolVar(&noTOTP, "disable-2fa", false, "also turn the user's two-factor sign-in off (a lost authenticator)")

	var yes bool
	del := &cobra.Command{
		Use:   "delete NAME --yes",
		Short: "Delete a user and end its sessions",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !yes {
				return usageError{"deleting a user needs --yes"}
			}
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			u, err := a.store.UserByName(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if err := a.store.DeleteUser(cmd.Context(), u.ID); err != nil {
				return err
			}
			if err := a.admin.RecordAudit(cmd.Context(), nil, "user.delete", map[string]any{"user": u.Name}); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "Deleted the user %s.\n", u.Name)
			return nil
		},
	}
	del.Flags().BoolVar(&yes, "yes", false, "confirm the deletion")

	user.AddCommand(list, create, reset, del)
	return user
}

// readPassword reads one line from standard input and checks the policy.
func (a *app) readPassword() (string, error) {
	line, err := bufio.NewReader(a.stdin).ReadString('\n')
	if err != nil && line == "" {
		return "", usageError{"the password is read from standard input (one line); none was given"}
	}
	pw := strings.TrimRight(line, "\r\n")
	if err := password.Valid(pw); err != nil {
		return "", usageError{err.Error()}
	}
	return pw, nil
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
