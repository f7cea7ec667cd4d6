// Package kubernetes holds the example manifests of toold as a native
// sidecar, and the test that decodes them strictly into the Kubernetes API
// types and checks them against toold's own defaults and flags. It is its
// own Go module so that k8s.io/api stays out of toold's go.mod.
package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/toold/toold/pkg/authz"
	"github.com/toold/toold/pkg/config"
	"github.com/toold/toold/pkg/image"
)

// decode decodes one YAML document strictly into its Kubernetes type, as
// the API server does: YAMLToJSONStrict (duplicate keys are errors), then
// sigs.k8s.io/json, case-sensitive, with unknown and duplicate fields as
// errors. (sigs.k8s.io/yaml's UnmarshalStrict would accept
// "readOnlyRootFileSystem" for readOnlyRootFilesystem: encoding/json
// matches field names case-insensitively.)
func decode(doc []byte) (any, error) {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, err
	}
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, &meta); err != nil {
		return nil, err
	}
	var obj any
	switch meta.APIVersion + " " + meta.Kind {
	case "apps/v1 Deployment":
		obj = &appsv1.Deployment{}
	case "v1 ConfigMap":
		obj = &corev1.ConfigMap{}
	case "v1 Pod":
		obj = &corev1.Pod{}
	default:
		return nil, fmt.Errorf("unexpected kind %q %q", meta.APIVersion, meta.Kind)
	}
	strict, err := sigsjson.UnmarshalStrict(j, obj, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		return nil, errors.Join(strict...)
	}
	return obj, nil
}

// documents splits a YAML stream at its "---" lines.
func documents(b []byte) [][]byte {
	var docs [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---[ \t]*$`).Split(string(b), -1) {
		if strings.TrimSpace(stripComments(d)) != "" {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

func stripComments(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// manifests decodes every *.yaml here.
func manifests(t *testing.T) (deps []*appsv1.Deployment, cms map[string]*corev1.ConfigMap) {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	cms = map[string]*corev1.ConfigMap{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range documents(b) {
			obj, err := decode(doc)
			if err != nil {
				t.Fatalf("%s, document %d: %v", f, i+1, err)
			}
			switch o := obj.(type) {
			case *appsv1.Deployment:
				deps = append(deps, o)
			case *corev1.ConfigMap:
				cms[o.Name] = o
			}
		}
	}
	return deps, cms
}

// The strict decoder rejects what the API server would: a misspelled or
// wrongly cased field, a duplicate key, an unknown kind.
func TestDecodeIsStrict(t *testing.T) {
	b, err := os.ReadFile("deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decode(b); err != nil {
		t.Fatalf("deployment.yaml: %v", err)
	}
	tests := []struct {
		name, from, to, want string
	}{
		{"wrong case", "readOnlyRootFilesystem: true", "readOnlyRootFileSystem: true", `unknown field "spec.template.spec.initContainers[0].securityContext.readOnlyRootFileSystem"`},
		{"misspelled", "allowPrivilegeEscalation: false", "allowPrivilegeEscalaton: false", "unknown field"},
		{"duplicate key", "      automountServiceAccountToken: false\n", "      automountServiceAccountToken: false\n      automountServiceAccountToken: true\n", "already set"},
		{"unknown kind", "kind: Deployment", "kind: Deploymnet", "unexpected kind"},
		{"wrong type", "terminationGracePeriodSeconds: 40", "terminationGracePeriodSeconds: forty", "cannot unmarshal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !bytes.Contains(b, []byte(tt.from)) {
				t.Fatalf("deployment.yaml has no %q", tt.from)
			}
			bad := bytes.Replace(b, []byte(tt.from), []byte(tt.to), 1)
			if _, err := decode(bad); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// The manifests agree with toold: the socket, workspace and state paths of
// the image, a config and policy toold loads, TOOLD_* variables toold
// knows, probes on the health-only listener, the hardening the image is
// built for, and a grace period that covers toold's shutdown.
func TestManifestsAgreeWithToold(t *testing.T) {
	deps, cms := manifests(t)
	if len(deps) != 1 {
		t.Fatalf("%d deployments, want 1", len(deps))
	}
	pod := deps[0].Spec.Template.Spec
	var toold, agent *corev1.Container
	for i := range pod.InitContainers {
		if pod.InitContainers[i].Name == "toold" {
			toold = &pod.InitContainers[i]
		}
	}
	for i := range pod.Containers {
		if pod.Containers[i].Name == "agent" {
			agent = &pod.Containers[i]
		}
	}
	if toold == nil || agent == nil {
		t.Fatal("want an init container toold (the sidecar) and a container agent")
	}
	if toold.RestartPolicy == nil || *toold.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Fatal("toold is not a native sidecar (restartPolicy: Always)")
	}
	env := envOf(toold)
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}

	// Paths: where the image expects its volumes; the agent shares the
	// socket's volume and is told the socket's path.
	socket := image.Socket
	if v, ok := env["TOOLD_SOCKET"]; ok {
		socket = v
	}
	sockVol := mountAt(t, toold, path.Dir(socket))
	if volumes[sockVol.Name].EmptyDir == nil {
		t.Errorf("the socket's volume %s is not an emptyDir", sockVol.Name)
	}
	var agentSock string
	for _, m := range agent.VolumeMounts {
		if m.Name == sockVol.Name {
			agentSock = path.Join(m.MountPath, path.Base(socket))
		}
	}
	if agentSock == "" || envOf(agent)["TOOLD_SOCKET"] != agentSock {
		t.Errorf("the agent's TOOLD_SOCKET %q, want the shared socket at %q", envOf(agent)["TOOLD_SOCKET"], agentSock)
	}
	ws := mountAt(t, toold, image.Workspace)
	if ws.ReadOnly {
		t.Error("the workspace is read-only for toold")
	}
	mountAt(t, toold, image.StateDir)
	if m := mountAt(t, toold, "/tmp"); env["TMPDIR"] != m.MountPath {
		t.Errorf("TMPDIR %q, want the /tmp volume", env["TMPDIR"])
	}

	// Config and policy from the ConfigMap, loaded by toold's own code.
	var cfgPath string
	for _, a := range toold.Args {
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			cfgPath = v
		}
	}
	if cfgPath == "" {
		t.Fatal("toold gets no --config=FILE")
	}
	cfgMount := mountAt(t, toold, path.Dir(cfgPath))
	cm := cms[volumes[cfgMount.Name].ConfigMap.Name]
	if cm == nil || !cfgMount.ReadOnly {
		t.Fatalf("the config comes from no ConfigMap here, or is writable (%s)", cfgMount.Name)
	}
	dir := t.TempDir()
	for k, v := range cm.Data {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Load(filepath.Join(dir, path.Base(cfgPath)))
	if err != nil {
		t.Fatalf("toold does not load the ConfigMap's config: %v", err)
	}
	if cfg.Socket != config.Default().Socket || cfg.Workspace != config.Default().Workspace {
		t.Error("the config sets socket or workspace, which the image's TOOLD_* variables override; leave them out")
	}
	if path.Dir(cfg.PolicyFile) != path.Dir(cfgPath) {
		t.Fatalf("policy_file %s is not in the ConfigMap's mount", cfg.PolicyFile)
	}
	if _, err := authz.LoadPolicy(filepath.Join(dir, path.Base(cfg.PolicyFile))); err != nil {
		t.Fatalf("toold does not load the ConfigMap's policy: %v", err)
	}
	cfg.Socket, cfg.Workspace = socket, image.Workspace
	cfg.SocketMode, cfg.HealthListen = env["TOOLD_SOCKET_MODE"], env["TOOLD_HEALTH_LISTEN"]
	if err := cfg.Validate(); err != nil {
		t.Fatalf("toold refuses the configuration: %v", err)
	}
	if cfg.SocketMode != "0660" || pod.SecurityContext.FSGroup == nil {
		t.Error("the agent (another user) reaches the socket through its group: want socket_mode 0660 and an fsGroup")
	}

	// Every TOOLD_* variable is one of toold's flags (toold --help).
	flags := tooldEnvNames(t)
	for k := range env {
		if strings.HasPrefix(k, "TOOLD_") && !flags[k] {
			t.Errorf("%s is not a toold setting (toold --help lists %v)", k, slices.Sorted(mapKeys(flags)))
		}
	}

	// Probes: gRPC on the health-only listener, never the tool service.
	_, port, err := net.SplitHostPort(cfg.HealthListen)
	if err != nil {
		t.Fatalf("TOOLD_HEALTH_LISTEN: %v", err)
	}
	for name, p := range map[string]*corev1.Probe{"startup": toold.StartupProbe, "readiness": toold.ReadinessProbe, "liveness": toold.LivenessProbe} {
		if p == nil || p.GRPC == nil || fmt.Sprint(p.GRPC.Port) != port {
			t.Errorf("%s probe %+v, want gRPC on the health listener's port %s", name, p, port)
			continue
		}
		if s := p.GRPC.Service; s != nil && *s != "" && *s != "toold.v1.ToolService" {
			t.Errorf("%s probe asks about service %q", name, *s)
		}
	}
	for _, p := range toold.Ports {
		if fmt.Sprint(p.ContainerPort) != port {
			t.Errorf("toold exposes port %d besides health", p.ContainerPort)
		}
	}
	if cfg.Listen != "" || env["TOOLD_LISTEN"] != "" || cfg.MCP.HTTP {
		t.Error("the tool service listens on TCP: keep it on the socket")
	}

	// Hardening, as the container runtime sees it (container over pod).
	for _, c := range []*corev1.Container{toold, agent} {
		sc, psc := c.SecurityContext, pod.SecurityContext
		if sc == nil {
			t.Fatalf("%s has no securityContext", c.Name)
		}
		nonRoot := (sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) || (sc.RunAsNonRoot == nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot)
		seccomp := sc.SeccompProfile
		if seccomp == nil {
			seccomp = psc.SeccompProfile
		}
		if !nonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 ||
			seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: securityContext %+v is not runAsNonRoot, readOnlyRootFilesystem, no privilege escalation, ALL capabilities dropped, seccomp RuntimeDefault", c.Name, sc)
		}
	}
	if u := toold.SecurityContext.RunAsUser; u == nil || *u != image.UID {
		t.Errorf("toold runs as %v, want the image's user %d", u, image.UID)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod mounts a service account token that commands could read")
	}

	// Grace: the agent's SIGTERM, then toold's drain and kill grace and
	// the gRPC stop (5s) fit in terminationGracePeriodSeconds.
	need := time.Duration(cfg.ShutdownGrace) + time.Duration(cfg.Terminal.KillGrace) + 5*time.Second
	if cfg.Terminal.KillGrace == 0 {
		need += 2 * time.Second
	}
	if g := pod.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second < need+10*time.Second {
		t.Errorf("terminationGracePeriodSeconds too short: toold needs %v after the agent's own shutdown (say 10s)", need)
	}

	// Resources: requests at least the measured idle RSS (bench row 9a,
	// 24.6 MB) with room for open streams (9b, 49.7 MB at 1,000), and a
	// memory limit (commands count against it).
	req := toold.Resources.Requests[corev1.ResourceMemory]
	lim := toold.Resources.Limits[corev1.ResourceMemory]
	if req.Cmp(resource.MustParse("50M")) < 0 || lim.IsZero() || lim.Cmp(req) < 0 {
		t.Errorf("toold's memory request %s / limit %s", req.String(), lim.String())
	}
}

func envOf(c *corev1.Container) map[string]string {
	m := map[string]string{}
	for _, e := range c.Env {
		m[e.Name] = e.Value
	}
	return m
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// mountAt returns c's volume mount at dir; none fails the test.
func mountAt(t *testing.T, c *corev1.Container, dir string) corev1.VolumeMount {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if path.Clean(m.MountPath) == path.Clean(dir) {
			return m
		}
	}
	t.Fatalf("%s has no volume at %s (the image writes there; its root filesystem is read-only)", c.Name, dir)
	return corev1.VolumeMount{}
}

// tooldEnvNames returns the TOOLD_* variables `toold --help` lists.
func tooldEnvNames(t *testing.T) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "toold")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/toold")
	build.Dir = "../.." // toold's own module, with its own dependencies
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build toold: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("toold --help: %v\n%s", err, out)
	}
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`\[\$(TOOLD_[A-Z_]+)\]`).FindAllStringSubmatch(string(out), -1) {
		names[m[1]] = true
	}
	if len(names) < 10 {
		t.Fatalf("toold --help lists %d variables:\n%s", len(names), out)
	}
	return names
}
