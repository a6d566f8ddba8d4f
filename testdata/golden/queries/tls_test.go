package queries

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/runtime/queryapi"
)

// selfSigned writes a certificate for 127.0.0.1 and its key, shared by
// the instances as a deployment would share one, and returns their files
// and a pool trusting it.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "queries"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestQueriesTLS: two instances serving HTTPS with a token answer every
// word through one of them, the other's forwarded over HTTPS with the
// token passed on; plain HTTP and a wrong token are refused.
func TestQueriesTLS(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, slices.Collect(maps.Keys(Topics))...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close) // after the instances stop
	seeds := cluster.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	truth := map[string]int64{}
	var recs []*kgo.Record
	for i := range 100 {
		w := fmt.Sprintf("w%02d", i%20)
		truth[w]++
		recs = append(recs, &kgo.Record{Topic: TopicWords, Key: []byte(w), Value: []byte("x")})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, pool := selfSigned(t)
	addrA, addrB := freeAddr(t), freeAddr(t)
	for _, in := range []struct{ name, addr string }{{"a", addrA}, {"b", addrB}} {
		cfg := Config{Brokers: seeds, AppID: "queries-tls", StateDir: t.TempDir(), InstanceID: in.name,
			MetricsAddr: in.addr, AdvertisedAddress: in.addr, OpsToken: token, OpsTLSCertFile: certFile, OpsTLSKeyFile: keyFile,
			CommitInterval: 100 * time.Millisecond}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- Run(ctx, cfg, Factories{}) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	client := NewQueryClient("https://"+addrA, queryapi.ClientOptions{HTTP: hc, Token: token})
	for deadline := time.Now().Add(90 * time.Second); ; {
		byB, bad := 0, ""
		for w, want := range truth {
			got, served, err := client.Counts().Get(context.Background(), w)
			if err != nil || got != want {
				bad = fmt.Sprintf("%s: %d, %v; want %d", w, got, err, want)
				break
			}
			if served.Instance.ID == "b" {
				byB++
			}
		}
		if bad == "" && byB > 0 && byB < len(truth) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never settled: %s (by b: %d)", bad, byB)
		}
		time.Sleep(50 * time.Millisecond)
	}
	wrong := NewQueryClient("https://"+addrA, queryapi.ClientOptions{HTTP: hc, Token: "guess"})
	if _, _, err := wrong.Counts().Get(context.Background(), "w01"); !isStatus(err, http.StatusUnauthorized) {
		t.Errorf("wrong token: %v, want 401", err)
	}
	plain := NewQueryClient("http://"+addrA, queryapi.ClientOptions{Token: token})
	if _, _, err := plain.Counts().Get(context.Background(), "w01"); err == nil {
		t.Error("plain HTTP to a TLS ops server answered")
	}
}

func isStatus(err error, status int) bool {
	qe, ok := err.(*queryapi.Error)
	return ok && qe.Status == status
}
