// Package expansion implements the Kubernetes $(VAR) syntax of container
// env values, command and args, as the kubelet does it
// (k8s.io/kubernetes third_party/forked/golang/expansion, reimplemented
// here because skiff does not import k8s.io/kubernetes):
//
//   - "$(NAME)" is replaced by NAME's value when NAME is defined;
//     an undefined reference stays as written;
//   - "$$" is an escaped "$": "$$(NAME)" yields the literal "$(NAME)";
//   - a "$" before anything else, an unterminated "$(" and a "$" at the
//     end of the input are kept as they are.
//
// Expansion is single-pass: a value that itself holds "$(X)" is not
// expanded again. All functions are pure and safe for concurrent use.
package expansion

import (
	"strings"
	"unicode/utf8"
)

// MappingFor returns a mapping for Expand that looks name up in each of
// vars in turn and, if no map defines it, returns the reference as written
// ("$(name)").
func MappingFor(vars ...map[string]string) func(name string) string {
	return func(name string) string {
		for _, m := range vars {
			if v, ok := m[name]; ok {
				return v
			}
		}
		return "$(" + name + ")"
	}
}

// Expand replaces the $(VAR) references in input using mapping (see the
// package comment for the rules).
func Expand(input string, mapping func(name string) string) string {
	var b strings.Builder
	checkpoint := 0
	for cursor := 0; cursor < len(input); cursor++ {
		if input[cursor] != '$' || cursor+1 >= len(input) {
			continue
		}
		b.WriteString(input[checkpoint:cursor])
		read, isVar, advance := readReference(input[cursor+1:])
		if isVar {
			b.WriteString(mapping(read))
		} else {
			b.WriteString(read)
		}
		cursor += advance
		checkpoint = cursor + 1
	}
	return b.String() + input[checkpoint:]
}

// readReference reads what follows a "$" in input: the variable name of a
// complete "(NAME)" reference (isVar), or the text to copy as is. advance is
// the number of bytes of input consumed.
func readReference(input string) (read string, isVar bool, advance int) {
	r, size := utf8.DecodeRuneInString(input)
	switch r {
	case '$': // escaped operator
		return input[:size], false, size
	case '(':
		if end := strings.IndexByte(input[1:], ')'); end >= 0 {
			return input[1 : 1+end], true, end + 2
		}
		return "$(", false, 1 // incomplete reference: keep it
	default:
		return "$" + string(r), false, size
	}
}
