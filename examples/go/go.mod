module distribute/examples

go 1.19

require distribute v0.0.0

replace distribute => ../../bindings/go
