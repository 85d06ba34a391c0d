// Command validate checks rendered Kubernetes manifests offline, as an API server would
// decode them: every document is decoded strictly into its k8s.io/api type (an unknown
// or duplicate field, a wrong type, an unknown kind is an error), and a few rules the
// server enforces beyond decoding are checked (DNS names, labels, env and port names,
// selectors that match their pod templates). References between documents are checked
// too: a Service, PodDisruptionBudget or HPA that names nothing rendered is an error.
//
// Usage: validate FILE...   (each FILE a multi-document YAML stream, e.g. helm template)
//
//	validate -refused FILE   (succeeds only if every document of FILE is refused on its own)
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

var scheme = runtime.NewScheme()

func init() {
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, autoscalingv2.AddToScheme,
		policyv1.AddToScheme, networkingv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
}

type doc struct {
	kind, name string
	obj        runtime.Object
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: validate FILE...")
		os.Exit(2)
	}
	if os.Args[1] == "-refused" {
		os.Exit(expectRefused(os.Args[2:]))
	}
	failed := false
	for _, path := range os.Args[1:] {
		docs, errs, err := validateFile(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			failed = true
			continue
		}
		for _, e := range append(errs, crossCheck(docs)...) {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, e)
			failed = true
		}
		fmt.Printf("%s: %d documents, %s\n", path, len(docs), countKinds(docs))
	}
	if failed {
		os.Exit(1)
	}
}

// expectRefused: the validator's own check, on documents that must each fail.
func expectRefused(paths []string) int {
	rc := 0
	for _, path := range paths {
		raws, err := readDocuments(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			return 1
		}
		for i, raw := range raws {
			d, err := decode(raw)
			if err == nil && len(checkObject(d))+len(crossCheck([]doc{d})) == 0 {
				fmt.Fprintf(os.Stderr, "%s: document %d (%s) was accepted\n", path, i, d.name)
				rc = 1
			}
		}
		if rc == 0 {
			fmt.Printf("%s: all %d documents refused\n", path, len(raws))
		}
	}
	return rc
}

// validateFile decodes and checks every document; errs are the documents' faults.
func validateFile(path string) (docs []doc, errs []error, err error) {
	raws, err := readDocuments(path)
	if err != nil {
		return nil, nil, err
	}
	for i, raw := range raws {
		d, err := decode(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("document %d (%s): %w", i, firstLine(raw), err))
			continue
		}
		for _, e := range checkObject(d) {
			errs = append(errs, fmt.Errorf("%s %s: %w", d.kind, d.name, e))
		}
		docs = append(docs, d)
	}
	return docs, errs, nil
}

// readDocuments splits a YAML stream into its non-blank documents.
func readDocuments(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if !isBlank(raw) {
			out = append(out, raw)
		}
	}
}

// decode turns one YAML document into its typed object, refusing what the type lacks.
func decode(raw []byte) (doc, error) {
	j, err := yaml.YAMLToJSONStrict(raw) // duplicate keys are errors
	if err != nil {
		return doc{}, err
	}
	var tm metav1.TypeMeta
	if err := kjson.UnmarshalCaseSensitivePreserveInts(j, &tm); err != nil {
		return doc{}, err
	}
	gv, err := schema.ParseGroupVersion(tm.APIVersion)
	if err != nil {
		return doc{}, err
	}
	obj, err := scheme.New(gv.WithKind(tm.Kind))
	if err != nil {
		return doc{}, err // a kind this validator does not know is not accepted unchecked
	}
	strict, err := kjson.UnmarshalStrict(j, obj)
	if err != nil {
		return doc{}, err
	}
	if len(strict) > 0 {
		return doc{}, errors.Join(strict...)
	}
	meta, ok := obj.(metav1.Object)
	if !ok {
		return doc{}, fmt.Errorf("%s has no metadata", tm.Kind)
	}
	return doc{kind: tm.Kind, name: meta.GetName(), obj: obj}, nil
}

func checkObject(d doc) []error {
	var errs []error
	meta := d.obj.(metav1.Object)
	for _, m := range validation.IsDNS1123Subdomain(meta.GetName()) {
		errs = append(errs, fmt.Errorf("metadata.name: %s", m))
	}
	errs = append(errs, checkLabels("metadata.labels", meta.GetLabels())...)
	switch o := d.obj.(type) {
	case *appsv1.Deployment:
		errs = append(errs, checkWorkload(o.Spec.Selector, &o.Spec.Template, nil)...)
	case *appsv1.StatefulSet:
		var claims []string
		for _, c := range o.Spec.VolumeClaimTemplates {
			claims = append(claims, c.Name)
		}
		errs = append(errs, checkWorkload(o.Spec.Selector, &o.Spec.Template, claims)...)
		if o.Spec.ServiceName == "" {
			errs = append(errs, errors.New("spec.serviceName: empty"))
		}
	case *corev1.Service:
		for _, p := range o.Spec.Ports {
			errs = append(errs, checkPortName(p.Name)...)
		}
		for _, m := range validation.IsDNS1035Label(o.Name) {
			errs = append(errs, fmt.Errorf("a Service name: %s", m))
		}
	}
	return errs
}

// checkWorkload: the selector matches the template, names are valid, every mount is a
// volume of the pod (or one of claims, a StatefulSet's volumeClaimTemplates).
func checkWorkload(sel *metav1.LabelSelector, tpl *corev1.PodTemplateSpec, claims []string) []error {
	var errs []error
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || s.Empty() {
		return append(errs, fmt.Errorf("spec.selector: empty or invalid (%v)", err))
	}
	if !s.Matches(labels.Set(tpl.Labels)) {
		errs = append(errs, errors.New("spec.selector does not match spec.template.metadata.labels"))
	}
	errs = append(errs, checkLabels("spec.template.metadata.labels", tpl.Labels)...)
	containers := append(append([]corev1.Container{}, tpl.Spec.InitContainers...), tpl.Spec.Containers...)
	if len(tpl.Spec.Containers) == 0 {
		errs = append(errs, errors.New("no containers"))
	}
	volumes := map[string]bool{}
	for _, v := range tpl.Spec.Volumes {
		volumes[v.Name] = true
	}
	for _, c := range claims {
		volumes[c] = true
	}
	for _, c := range containers {
		if c.Image == "" {
			errs = append(errs, fmt.Errorf("container %s: no image", c.Name))
		}
		for _, e := range c.Env {
			for _, m := range validation.IsEnvVarName(e.Name) {
				errs = append(errs, fmt.Errorf("container %s env %q: %s", c.Name, e.Name, m))
			}
		}
		for _, p := range c.Ports {
			errs = append(errs, checkPortName(p.Name)...)
		}
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				errs = append(errs, fmt.Errorf("container %s mounts %q, which is not a volume", c.Name, m.Name))
			}
		}
	}
	return errs
}

func checkPortName(name string) []error {
	if name == "" {
		return nil
	}
	var errs []error
	for _, m := range validation.IsValidPortName(name) {
		errs = append(errs, fmt.Errorf("port name %q: %s", name, m))
	}
	return errs
}

func checkLabels(where string, l map[string]string) []error {
	var errs []error
	for k, v := range l {
		for _, m := range validation.IsQualifiedName(k) {
			errs = append(errs, fmt.Errorf("%s key %q: %s", where, k, m))
		}
		for _, m := range validation.IsValidLabelValue(v) {
			errs = append(errs, fmt.Errorf("%s[%s] value %q: %s", where, k, v, m))
		}
	}
	return errs
}

// crossCheck: what one document names must be rendered (a selector must select a pod
// template, an HPA must scale a rendered Deployment, a StatefulSet's serviceName must be
// a rendered headless Service).
func crossCheck(docs []doc) []error {
	var errs []error
	var templates []labels.Set
	deployments, headless := map[string]bool{}, map[string]bool{}
	for _, d := range docs {
		switch o := d.obj.(type) {
		case *appsv1.Deployment:
			templates = append(templates, o.Spec.Template.Labels)
			deployments[o.Name] = true
		case *appsv1.StatefulSet:
			templates = append(templates, o.Spec.Template.Labels)
		case *corev1.Service:
			if o.Spec.ClusterIP == corev1.ClusterIPNone {
				headless[o.Name] = true
			}
		}
	}
	selects := func(sel labels.Selector) bool {
		for _, t := range templates {
			if sel.Matches(t) {
				return true
			}
		}
		return false
	}
	for _, d := range docs {
		switch o := d.obj.(type) {
		case *corev1.Service:
			if len(o.Spec.Selector) > 0 && !selects(labels.SelectorFromSet(o.Spec.Selector)) {
				errs = append(errs, fmt.Errorf("Service %s selects no rendered pod template", o.Name))
			}
		case *policyv1.PodDisruptionBudget:
			s, err := metav1.LabelSelectorAsSelector(o.Spec.Selector)
			if err != nil || !selects(s) {
				errs = append(errs, fmt.Errorf("PodDisruptionBudget %s selects no rendered pod template", o.Name))
			}
		case *autoscalingv2.HorizontalPodAutoscaler:
			ref := o.Spec.ScaleTargetRef
			if ref.Kind != "Deployment" || !deployments[ref.Name] {
				errs = append(errs, fmt.Errorf("HorizontalPodAutoscaler %s scales %s %s, which is not rendered", o.Name, ref.Kind, ref.Name))
			}
		case *appsv1.StatefulSet:
			if !headless[o.Spec.ServiceName] {
				errs = append(errs, fmt.Errorf("StatefulSet %s: serviceName %s is not a rendered headless Service", o.Name, o.Spec.ServiceName))
			}
		}
	}
	return errs
}

func countKinds(docs []doc) string {
	n := map[string]int{}
	for _, d := range docs {
		n[d.kind]++
	}
	kinds := make([]string, 0, len(n))
	for k := range n {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, n[k])
	}
	return strings.Join(parts, ", ")
}

func isBlank(raw []byte) bool {
	for _, line := range bytes.Split(raw, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if len(t) > 0 && t[0] != '#' && string(t) != "---" {
			return false
		}
	}
	return true
}

func firstLine(raw []byte) string {
	for _, line := range strings.Split(string(raw), "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") && t != "---" {
			return t
		}
	}
	return ""
}
