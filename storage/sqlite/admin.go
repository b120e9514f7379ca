package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/postgram-go/postgram/driver"
)

// AdminConn returns the store's writer connection, for administrative SQL
// (pgm-admin sql), as storage/postgres's Pool is. It is the one connection
// every write of this Store goes through, so the caller must Close it
// promptly: until then, the Store's writes wait. Statements run as the
// database's owner, with no validation by Postgram; writes through it
// still reach the in-memory vector index, whose triggers record every
// change (change_log), before this process's next search.
func (s *Store) AdminConn(ctx context.Context) (*sql.Conn, error) {
	if s.closed.Load() {
		return nil, fmt.Errorf("sqlite: store is closed: %w", driver.ErrUnavailable)
	}
	c, err := s.w.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: admin connection: %w", mapErr(err))
	}
	return c, nil
}
