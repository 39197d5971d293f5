"""The conversion conformance table (docs/conformance.md): what each upstream format does
with each client format's fields, judged on the bodies gw's adapters really encode."""
