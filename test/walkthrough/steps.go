package walkthrough

import "strings"

// A step is one command of a walk-through, run against every server.
type step struct {
	// id is the checklist item and what the step does.
	id string
	// args are kubectl's arguments; method and path (with body) send a
	// request through `kubectl proxy` instead. Both may hold
	// {{uid <kind>/<name>}}, replaced per server with that object's UID.
	args               []string
	stdin              string
	method, path, body string
	// until makes the step poll (up to pollTimeout) until its normalized
	// output contains it: the controllers act asynchronously.
	until string
	// codeOnly compares a request's status code, not its body (a
	// Foreground or Orphan delete returns the object, whose status the
	// controllers are still changing).
	codeOnly bool
}

// The examples' nginx Deployment (k8s.io/examples/application/deployment.yaml),
// and the ReplicaSet of "Deleting a ReplicaSet and its Pods".
const (
	nginxDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx-deployment
spec:
  selector:
    matchLabels:
      app: nginx
  replicas: 2
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:1.14.2
        ports:
        - containerPort: 80
`
	frontendReplicaSet = `apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: frontend
  labels:
    app: guestbook
    tier: frontend
spec:
  replicas: 3
  selector:
    matchLabels:
      tier: frontend
  template:
    metadata:
      labels:
        tier: frontend
    spec:
      containers:
      - name: php-redis
        image: us-docker.pkg.dev/google-samples/containers/gke/gb-frontend:v5
`
)

const parentChild = `apiVersion: v1
kind: ConfigMap
metadata:
  name: mymap-child
  ownerReferences:
  - apiVersion: v1
    kind: ConfigMap
    name: mymap-parent
    uid: {{uid configmap/mymap-parent}}
`

func labelledPod(name, env, tier string) string {
	return `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
  labels: {environment: ` + env + `, tier: ` + tier + `}
spec:
  nodeName: walk-node
  automountServiceAccountToken: false
  containers:
  - {name: app, image: skiff.test/busybox:1.36, command: [sleep, "1000"]}
`
}

// walkthroughs are the reference docs' walk-throughs, in order. Each
// starts from objects it creates itself, in the default namespace unless
// it says otherwise.
var walkthroughs = [][]step{
	{ // S004 › The basic delete
		{id: "I.64 create", args: []string{"create", "configmap", "mymap"}},
		{id: "I.64 get", args: []string{"get", "configmap/mymap"}},
		{id: "I.64 delete", args: []string{"delete", "configmap/mymap"}},
		{id: "I.64 get gone", args: []string{"get", "configmap/mymap"}},
	},
	{ // S004 › Understanding Finalizers
		{id: "I.65 create", args: []string{"create", "-f", "-"}, stdin: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mymap\n  finalizers:\n  - kubernetes\n"},
		{id: "I.65 delete blocked", args: []string{"delete", "configmap/mymap", "--wait=false"}},
		{id: "I.65 get yaml", args: []string{"get", "configmap/mymap", "-o", "yaml"}},
		{id: "I.65 patch", args: []string{"patch", "configmap/mymap", "--type", "json", "--patch", `[ { "op": "remove", "path": "/metadata/finalizers" } ]`}},
		{id: "I.65 gone", args: []string{"get", "configmap/mymap"}, until: "NotFound"},
	},
	{ // S004 › Owner References
		{id: "I.66 parent", args: []string{"create", "configmap", "mymap-parent"}},
		{id: "I.66 child", args: []string{"create", "-f", "-"}, stdin: parentChild},
		{id: "I.66 child owner", args: []string{"get", "configmap/mymap-child", "-o", "jsonpath={.metadata.ownerReferences[0].name}"}},
		{id: "I.66 delete child", args: []string{"delete", "configmap/mymap-child"}},
		{id: "I.66 parent kept", args: []string{"get", "configmap"}},
		{id: "I.66 child again", args: []string{"create", "-f", "-"}, stdin: parentChild},
		{id: "I.66 delete parent", args: []string{"delete", "configmap/mymap-parent"}},
		{id: "I.66 both gone", args: []string{"get", "configmap", "--field-selector", "metadata.name!=kube-root-ca.crt"}, until: "No resources found"},
		{id: "I.66 orphan parent", args: []string{"create", "configmap", "mymap-parent"}},
		{id: "I.66 orphan child", args: []string{"create", "-f", "-"}, stdin: parentChild},
		{id: "I.66 delete orphan", args: []string{"delete", "--cascade=orphan", "configmap/mymap-parent"}},
		{id: "I.66 child orphaned", args: []string{"get", "configmap/mymap-child", "-o", "jsonpath=owners:{.metadata.ownerReferences}"}, until: "owners:\n"},
		{id: "I.66 clean", args: []string{"delete", "configmap/mymap-child"}},
	},
	{ // S004 › Owner References, through kubectl proxy (I.67)
		{id: "I.67 parent", args: []string{"create", "configmap", "mymap-parent"}},
		{id: "I.67 child", args: []string{"create", "-f", "-"}, stdin: parentChild},
		{id: "I.67 delete background", method: "DELETE", path: "/api/v1/namespaces/default/configmaps/mymap-parent",
			body: `{ "kind":"DeleteOptions", "apiVersion":"v1", "propagationPolicy":"Background" }`},
		{id: "I.67 both gone", args: []string{"get", "configmap", "--field-selector", "metadata.name!=kube-root-ca.crt"}, until: "No resources found"},
		{id: "I.67 parent 2", args: []string{"create", "configmap", "mymap-parent"}},
		{id: "I.67 child 2", args: []string{"create", "-f", "-"}, stdin: parentChild},
		{id: "I.67 delete foreground", method: "DELETE", path: "/api/v1/namespaces/default/configmaps/mymap-parent",
			body: `{ "kind":"DeleteOptions", "apiVersion":"v1", "propagationPolicy":"Foreground" }`},
		{id: "I.67 foreground gone", args: []string{"get", "configmap", "--field-selector", "metadata.name!=kube-root-ca.crt"}, until: "No resources found"},
	},
	{ // S000 §1 › Describing a Kubernetes object (I.58), §2 (I.59), S001 5.2.1 (I.71)
		{id: "I.58 apply", args: []string{"apply", "-f", "-"}, stdin: nginxDeployment},
		{id: "I.58 up to date", args: []string{"get", "deployment/nginx-deployment", "-o", "jsonpath=updated:{.status.updatedReplicas}"}, until: "updated:2"},
		{id: "I.58 get", args: []string{"get", "deployments"}},
		{id: "I.58 re-apply", args: []string{"apply", "-f", "-"}, stdin: strings.Replace(nginxDeployment, "replicas: 2", "replicas: 3", 1)},
		{id: "I.58 scaled", args: []string{"get", "deployment/nginx-deployment", "-o", "jsonpath=updated:{.status.updatedReplicas}"}, until: "updated:3"},
		{id: "I.71 patch", args: []string{"patch", "deployment/nginx-deployment", "-p", `{"spec":{"progressDeadlineSeconds":600}}`}},
		{id: "I.71 patch strategic", args: []string{"patch", "deployment/nginx-deployment", "--type=strategic", "-p", `{"spec":{"minReadySeconds":5}}`}},
		{id: "I.59 create", args: []string{"create", "deployment", "nginx", "--image", "nginx"}},
		{id: "I.59 replicaset", args: []string{"get", "rs", "-l", "app=nginx", "-o", "jsonpath={.items[*].metadata.name} current:{.items[*].status.replicas}"}, until: "current:1"},
		{id: "I.59 get rs", args: []string{"get", "rs", "-l", "app=nginx"}},
		{id: "I.59 pod", args: []string{"get", "pods", "-l", "app=nginx", "-o", "name"}, until: "pod/"},
		{id: "I.59 delete", args: []string{"delete", "deployment", "nginx", "nginx-deployment"}},
		{id: "I.59 gone", args: []string{"get", "rs,pods", "-l", "app=nginx"}, until: "No resources found"},
	},
	{ // S001 5.2.2 › Deleting a ReplicaSet and its Pods; › Deleting just a ReplicaSet (I.68)
		{id: "I.68 create", args: []string{"create", "-f", "-"}, stdin: frontendReplicaSet},
		{id: "I.68 pods", args: []string{"get", "rs/frontend", "-o", "jsonpath=current:{.status.replicas}"}, until: "current:3"},
		{id: "I.68 delete foreground", method: "DELETE", path: "/apis/apps/v1/namespaces/default/replicasets/frontend",
			body: `{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Foreground"}`, codeOnly: true},
		{id: "I.68 foreground gone", args: []string{"get", "rs,pods", "-l", "tier=frontend"}, until: "No resources found"},
		{id: "I.68 create again", args: []string{"create", "-f", "-"}, stdin: frontendReplicaSet},
		{id: "I.68 pods again", args: []string{"get", "rs/frontend", "-o", "jsonpath=current:{.status.replicas}"}, until: "current:3"},
		{id: "I.68 delete orphan", method: "DELETE", path: "/apis/apps/v1/namespaces/default/replicasets/frontend",
			body: `{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Orphan"}`, codeOnly: true},
		{id: "I.68 rs gone", args: []string{"get", "rs", "-l", "tier=frontend"}, until: "No resources found"},
		{id: "I.68 pods orphaned", args: []string{"get", "pods", "-l", "tier=frontend", "-o", "jsonpath=owners:{.items[*].metadata.ownerReferences} count:{.items[*].kind}"}},
		{id: "I.68 clean", args: []string{"delete", "pods", "-l", "tier=frontend", "--grace-period=0", "--force"}},
	},
	{ // S000 §4 › Label selectors (I.61), §7 › Field selectors (I.63)
		{id: "I.61 pods", args: []string{"create", "-f", "-"}, stdin: labelledPod("front-prod", "production", "frontend") +
			"---\n" + labelledPod("front-qa", "qa", "frontend") + "---\n" + labelledPod("back-prod", "production", "backend")},
		{id: "I.61 equality", args: []string{"get", "pods", "-l", "environment=production,tier=frontend"}},
		{id: "I.61 set", args: []string{"get", "pods", "-l", "environment in (production),tier in (frontend)"}},
		{id: "I.61 set or", args: []string{"get", "pods", "-l", "environment in (production, qa)"}},
		{id: "I.61 exists notin", args: []string{"get", "pods", "-l", "environment,environment notin (frontend)"}},
		{id: "I.63 phase", args: []string{"get", "pods", "--field-selector", "status.phase=Running"}},
		{id: "I.63 two fields", args: []string{"get", "pods", "--field-selector=status.phase!=Running,spec.restartPolicy=Always"}},
		{id: "I.63 unknown field", args: []string{"get", "pods", "--field-selector", "foo.bar=baz"}},
	},
	{ // S000 §5 › Namespaces (I.62); S004 › Forcing a Deletion of a Namespace (I.50, I.69)
		{id: "I.62 create", args: []string{"create", "namespace", "test"}},
		{id: "I.62 get", args: []string{"get", "namespace"}},
		{id: "I.62 run", args: []string{"run", "nginx", "--image=nginx", "--namespace=test", "--overrides", `{"spec":{"nodeName":"walk-node"}}`}},
		{id: "I.62 pods", args: []string{"get", "pods", "--namespace=test"}},
		// kube-apiserver keeps configmaps of its own in kube-system.
		{id: "I.63 namespace cm", args: []string{"create", "configmap", "settings", "--namespace=test", "--from-literal=a=b"}},
		{id: "I.63 namespace", args: []string{"get", "configmaps", "--all-namespaces", "--field-selector",
			"metadata.namespace!=default,metadata.namespace!=kube-system,metadata.name!=kube-root-ca.crt"}},
		{id: "I.69 blocked namespace", args: []string{"create", "-f", "-"}, stdin: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: stuck\nspec:\n  finalizers: [example.com/block]\n"},
		{id: "I.69 delete", args: []string{"delete", "namespace", "stuck", "--wait=false"}},
		{id: "I.69 terminating", args: []string{"get", "namespace", "stuck", "-o", "jsonpath={.status.phase} {.spec.finalizers}"}, until: "Terminating"},
		{id: "I.69 finalize", method: "PUT", path: "/api/v1/namespaces/stuck/finalize",
			body: `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"stuck"},"spec":{"finalizers":null}}`},
		{id: "I.69 gone", args: []string{"get", "namespace", "stuck"}, until: "NotFound"},
	},
}
