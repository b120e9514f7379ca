package certreload

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writePair writes a self-signed certificate for 127.0.0.1 with serial
// to certFile and keyFile, and returns it.
func writePair(t *testing.T, certFile, keyFile string, serial int64) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "postgram test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// servedSerial connects anew (no session reuse) and returns the serial of
// the certificate the server presents, trusting roots.
func servedSerial(t *testing.T, url string, roots *x509.CertPool) int64 {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.TLS.PeerCertificates[0].SerialNumber.Int64()
}

func TestReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	first := writePair(t, certFile, keyFile, 1)
	r, err := New(certFile, keyFile, 10*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	// (httptest's StartTLS would add its own certificate, which Go
	// prefers to GetCertificate for clients that send no server name.)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
	go hs.Serve(tls.NewListener(ln, r.TLSConfig()))
	defer hs.Close()
	srv := struct{ URL string }{"https://" + ln.Addr().String()}
	roots := x509.NewCertPool()
	roots.AddCert(first)
	if got := servedSerial(t, srv.URL, roots); got != 1 {
		t.Fatalf("serial %d, want 1", got)
	}

	// A half-written renewal (new certificate, old key) keeps the old pair.
	dir2 := t.TempDir()
	second := writePair(t, filepath.Join(dir2, "c"), filepath.Join(dir2, "k"), 2)
	roots.AddCert(second)
	b, _ := os.ReadFile(filepath.Join(dir2, "c"))
	if err := os.WriteFile(certFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Minute)
	os.Chtimes(certFile, future, future)
	time.Sleep(20 * time.Millisecond)
	if got := servedSerial(t, srv.URL, roots); got != 1 {
		t.Fatalf("a mismatched pair must keep the old certificate: serial %d", got)
	}
	// The key arrives: the new pair is served, without a restart.
	kb, _ := os.ReadFile(filepath.Join(dir2, "k"))
	if err := os.WriteFile(keyFile, kb, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(keyFile, future, future)
	time.Sleep(20 * time.Millisecond)
	if got := servedSerial(t, srv.URL, roots); got != 2 {
		t.Fatalf("after the renewal: serial %d, want 2", got)
	}
}

func TestNewRefusesBadFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := New(filepath.Join(dir, "none.pem"), filepath.Join(dir, "none.key"), 0, nil); err == nil {
		t.Fatal("missing files accepted")
	}
	bad := filepath.Join(dir, "bad.pem")
	os.WriteFile(bad, []byte("not a certificate"), 0o600)
	if _, err := New(bad, bad, 0, nil); err == nil {
		t.Fatal("garbage accepted")
	}
}
