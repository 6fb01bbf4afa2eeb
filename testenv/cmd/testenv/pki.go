package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// pki holds the certificate authority that signs every certificate of one
// testenv cluster. Everything is generated fresh by each "up": nothing here is
// meant to outlive the cluster.
type pki struct {
	dir    string
	caCert *x509.Certificate
	caKey  crypto.Signer
}

// certSpec describes one leaf certificate.
type certSpec struct {
	name   string // file stem: <name>.crt, <name>.key
	cn     string
	orgs   []string
	client bool
	server bool
	ips    []net.IP
	dns    []string
}

const certValidity = 365 * 24 * time.Hour

func newPKI(dir, caName string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: caName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	p := &pki{dir: dir, caCert: cert, caKey: key}
	if err := writePEM(p.path("ca.crt"), "CERTIFICATE", der, 0o644); err != nil {
		return nil, err
	}
	if err := writeKey(p.path("ca.key"), key); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

// issue creates <name>.crt and <name>.key signed by the CA.
func (p *pki) issue(s certSpec) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: s.cn, Organization: s.orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		IPAddresses:  s.ips,
		DNSNames:     s.dns,
	}
	if s.client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	if s.server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, key.Public(), p.caKey)
	if err != nil {
		return err
	}
	if err := writePEM(p.path(s.name+".crt"), "CERTIFICATE", der, 0o644); err != nil {
		return err
	}
	return writeKey(p.path(s.name+".key"), key)
}

// serviceAccountKeys writes sa.key (RSA private key, used by the apiserver to
// sign tokens and by the token controller) and sa.pub (to verify them).
func (p *pki) serviceAccountKeys() error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	if err := writePEM(p.path("sa.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key), 0o600); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	return writePEM(p.path("sa.pub"), "PUBLIC KEY", pub, 0o644)
}

// kubeconfig writes a kubeconfig for user <certName> (its cert and key are
// embedded) talking to server, trusting the CA.
func (p *pki) kubeconfig(path, server, user, certName string) error {
	ca, err := os.ReadFile(p.path("ca.crt"))
	if err != nil {
		return err
	}
	crt, err := os.ReadFile(p.path(certName + ".crt"))
	if err != nil {
		return err
	}
	key, err := os.ReadFile(p.path(certName + ".key"))
	if err != nil {
		return err
	}
	b64 := base64.StdEncoding.EncodeToString
	var sb strings.Builder
	fmt.Fprintf(&sb, `apiVersion: v1
kind: Config
clusters:
- name: tidepool-testenv
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: %s@tidepool-testenv
  context:
    cluster: tidepool-testenv
    user: %s
    namespace: default
current-context: %s@tidepool-testenv
`, server, b64(ca), user, b64(crt), b64(key), user, user, user)
	return os.WriteFile(path, []byte(sb.String()), 0o600)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err)
	}
	return n
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der, 0o600)
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode)
}
