// Package pypkg says what a Python package name and version may be where
// Atelier writes them into a pip command line or a requirements file: a
// model's config.json dependencies (checked at import, and again by the
// runner before it installs them) and the frozen packages of a notebook's
// environment. One rule for all three, stricter than pip where pip would
// take something that could be read as an option or a second line.
//
//   - A name is a PEP 508 distribution name: letters, digits, '.', '_'
//     and '-', starting and ending with a letter or digit, at most
//     MaxNameLen bytes; with extras it is NAME[extra,extra], each extra a
//     name too.
//   - A version is a PEP 440 version as pip prints and takes it (local
//     labels and epochs included): it starts with a letter or digit and
//     holds letters, digits and ".+!_-", at most MaxVersionLen bytes; a
//     version pattern may end in ".*" (a prefix match, "1.2.*").
//   - Norm is the PEP 503 normal form of a name, which pip compares.
package pypkg
