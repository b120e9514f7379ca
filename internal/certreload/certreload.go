// Package certreload serves a TLS certificate from a pair of PEM files and
// picks up new files without a restart (a renewed certificate from
// certbot, cert-manager or an operator): tls.Config.GetCertificate checks
// the files' modification times and sizes at most once per CheckEvery and
// reloads the pair when they changed. A pair that fails to load (for
// example the certificate was written but not yet its key) is logged and
// the previous certificate stays in use.
package certreload

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// DefaultCheckEvery is how often the files are checked for changes.
const DefaultCheckEvery = time.Second

// Reloader holds the current certificate. It is safe for concurrent use.
type Reloader struct {
	certFile, keyFile string
	checkEvery        time.Duration
	log               *slog.Logger

	mu        sync.Mutex
	cert      *tls.Certificate
	stamp     [2]fileStamp
	lastCheck time.Time
}

type fileStamp struct {
	mod  time.Time
	size int64
}

// New loads the pair and returns a Reloader; checkEvery 0 means
// DefaultCheckEvery. An unreadable or invalid pair is an error naming the
// files.
func New(certFile, keyFile string, checkEvery time.Duration, log *slog.Logger) (*Reloader, error) {
	if checkEvery <= 0 {
		checkEvery = DefaultCheckEvery
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Reloader{certFile: certFile, keyFile: keyFile, checkEvery: checkEvery, log: log}
	st, err := r.stamps()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS_CERT_FILE %s / TLS_KEY_FILE %s: %w", certFile, keyFile, err)
	}
	r.cert, r.stamp, r.lastCheck = &cert, st, time.Now()
	return r, nil
}

func (r *Reloader) stamps() ([2]fileStamp, error) {
	var st [2]fileStamp
	for i, p := range []string{r.certFile, r.keyFile} {
		fi, err := os.Stat(p)
		if err != nil {
			return st, fmt.Errorf("TLS certificate: %w", err)
		}
		st[i] = fileStamp{fi.ModTime(), fi.Size()}
	}
	return st, nil
}

// GetCertificate implements tls.Config.GetCertificate.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := time.Now(); now.Sub(r.lastCheck) >= r.checkEvery {
		r.lastCheck = now
		r.reload()
	}
	return r.cert, nil
}

// reload loads the pair when its files changed. The caller holds r.mu.
func (r *Reloader) reload() {
	st, err := r.stamps()
	if err != nil {
		r.log.Warn("TLS certificate files cannot be read; serving the previous certificate", "err", err)
		return
	}
	if st == r.stamp {
		return
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		// Perhaps half written: try again at the next check.
		r.log.Warn("TLS certificate files changed but do not load; serving the previous certificate", "err", err)
		return
	}
	r.cert, r.stamp = &cert, st
	r.log.Info("TLS certificate reloaded", "cert_file", r.certFile)
}

// TLSConfig returns a server configuration (TLS 1.2 or later) serving the
// reloader's certificate.
func (r *Reloader) TLSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.GetCertificate}
}
