// Package podspec holds the API-level rules for Pods and the objects they
// reference (ConfigMaps, Secrets) that both sides of skiff apply: the
// defaults the API server sets (SetDefaults, SetSecretDefaults) and
// validation with field paths (Validate, ValidateConfigMap,
// ValidateSecret), including the rejection of every field skiff does not
// implement yet (see supportedFieldPaths). The node agent's static-pod
// reader (staticpods, after manifests decodes the files) and skiff-apiserver
// (shim/registry, shim/scheme) call the same functions, so a pod is
// accepted or refused alike whichever way it reaches the node.
//
// The package is neutral: it imports only k8s.io libraries and other
// neutral packages (internal/downward), never node-side or shim packages
// (the depguard rules in .golangci.yml). All functions are pure and safe
// for concurrent use on distinct objects.
package podspec
