package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key
// (PEM) into dir and returns their paths and the certificate.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "sluice test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, cert
}

// TestTLS: with TLSCertFile and TLSKeyFile set, Serve answers HTTPS with
// that certificate: a client that trusts it pushes and queries; a plain
// HTTP request and a client that does not trust the certificate get no
// answer from the API.
func TestTLS(t *testing.T) {
	certFile, keyFile, cert := selfSigned(t, t.TempDir())
	cfg := DefaultConfig()
	cfg.TLSCertFile, cfg.TLSKeyFile = certFile, keyFile
	f := newFixture(t, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	base := "https://" + ln.Addr().String()

	pool := x509.NewCertPool()
	pool.AddCert(cert)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: time.Minute}

	ts := time.Now().Add(-time.Minute).UnixNano()
	body := `{"streams":[{"stream":{"app":"tls"},"values":[["` + strconv.FormatInt(ts, 10) + `","over https"]]}]}`
	req, err := http.NewRequest(http.MethodPost, base+"/loki/api/v1/push", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Scope-OrgID", "team-tls")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("push over https: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("push over https: %s %s", resp.Status, b)
	}
	if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 || !resp.TLS.PeerCertificates[0].Equal(cert) {
		t.Fatalf("the answer did not come over TLS with the configured certificate: %+v", resp.TLS)
	}

	q := url.Values{"query": {`{app="tls"}`}, "start": {strconv.FormatInt(ts-int64(time.Minute), 10)}, "end": {strconv.FormatInt(time.Now().UnixNano(), 10)}}
	req, _ = http.NewRequest(http.MethodGet, base+"/loki/api/v1/query_range?"+q.Encode(), nil)
	req.Header.Set("X-Scope-OrgID", "team-tls")
	resp, err = c.Do(req)
	if err != nil {
		t.Fatalf("query over https: %v", err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	var qr struct {
		Data struct {
			Result []struct {
				Stream map[string]string
				Values [][2]string
			}
		}
	}
	if err := json.Unmarshal(b, &qr); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("query over https: %s %v: %s", resp.Status, err, b)
	}
	if len(qr.Data.Result) != 1 || len(qr.Data.Result[0].Values) != 1 || qr.Data.Result[0].Values[0][1] != "over https" {
		t.Fatalf("query over https: %s, want the line pushed", b)
	}

	// Plain HTTP to the HTTPS port: net/http answers 400 and nothing of the API.
	plain := &http.Client{Timeout: time.Minute}
	resp, err = plain.Get("http://" + ln.Addr().String() + "/ready")
	if err != nil {
		t.Errorf("plain HTTP to the HTTPS listener: %v, want 400 naming HTTPS", err)
	} else {
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "HTTPS") {
			t.Errorf("plain HTTP to the HTTPS listener: %s %q, want 400 naming HTTPS", resp.Status, b)
		}
	}
	// A client that does not trust the certificate refuses it.
	untrusting := &http.Client{Timeout: time.Minute}
	if resp, err := untrusting.Get(base + "/ready"); err == nil {
		resp.Body.Close()
		t.Errorf("a client without the certificate in its roots got %s, want a certificate error", resp.Status)
	} else if !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client without the certificate in its roots: %v, want a certificate error", err)
	}
}

// TestTLSMissingFiles: Serve with a certificate file that does not exist
// returns an error naming it, instead of serving.
func TestTLSMissingFiles(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.TLSCertFile, cfg.TLSKeyFile = filepath.Join(dir, "missing-cert.pem"), filepath.Join(dir, "missing-key.pem")
	f := newFixture(t, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err = f.srv.Serve(ctx, ln)
	if err == nil || !strings.Contains(err.Error(), "missing-cert.pem") {
		t.Fatalf("Serve with a missing certificate file: %v, want an error naming it", err)
	}
}
