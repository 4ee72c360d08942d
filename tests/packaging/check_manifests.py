#!/usr/bin/env python3
"""Checks the Kubernetes manifests of deploy/kubernetes: they parse as YAML and say what
the library expects (README, "Multi-host"). Usage: check_manifests.py DEPLOY_DIR"""
import os
import sys

import yaml

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)


def env_of(container):
    return {e["name"]: e for e in container.get("env", [])}


def token_from_secret(env, where):
    token = env.get("DIST_JOB_TOKEN", {})
    check("secretKeyRef" in token.get("valueFrom", {}), f"{where}: DIST_JOB_TOKEN does not come from a Secret")


def check_tfjob(doc):
    check(doc["apiVersion"] == "kubeflow.org/v1" and doc["kind"] == "TFJob", "tfjob.yaml: not a kubeflow.org/v1 TFJob")
    worker = doc["spec"]["tfReplicaSpecs"]["Worker"]
    check(worker["replicas"] >= 2, "tfjob.yaml: fewer than 2 workers")
    container = worker["template"]["spec"]["containers"][0]
    check(container["name"] == "tensorflow", "tfjob.yaml: the operator sets TF_CONFIG in the container named tensorflow")
    command = container["command"]
    check(command[:3] == ["train_mlp", "--strategy", "multi_worker"], f"tfjob.yaml: command {command}")
    check("--cluster" not in command, "tfjob.yaml: TFJob gives TF_CONFIG; no --cluster")
    check(any(p["containerPort"] == 2222 for p in container["ports"]), "tfjob.yaml: port 2222 (the TFJob default)")
    token_from_secret(env_of(container), "tfjob.yaml")


def check_statefulset(docs):
    by_kind = {d["kind"]: d for d in docs}
    service, sts = by_kind.get("Service"), by_kind.get("StatefulSet")
    check(service is not None and sts is not None, "statefulset.yaml: needs a Service and a StatefulSet")
    if service is None or sts is None:
        return
    check(service["spec"].get("clusterIP") == "None", "statefulset.yaml: the Service must be headless (clusterIP: None)")
    check(sts["spec"]["serviceName"] == service["metadata"]["name"], "statefulset.yaml: serviceName != the Service's name")
    check(sts["spec"]["selector"]["matchLabels"].items() <= sts["spec"]["template"]["metadata"]["labels"].items(),
          "statefulset.yaml: the selector does not match the pod labels")
    check(service["spec"]["selector"].items() <= sts["spec"]["template"]["metadata"]["labels"].items(),
          "statefulset.yaml: the Service does not select the pods")
    container = sts["spec"]["template"]["spec"]["containers"][0]
    command = container["command"]
    check(command[:5] == ["train_mlp", "--strategy", "multi_worker", "--cluster", "statefulset"],
          f"statefulset.yaml: command {command}")
    env = env_of(container)
    check(env.get("POD_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.name",
          "statefulset.yaml: POD_NAME must come from metadata.name")
    check(env.get("DIST_K8S_SERVICE", {}).get("value") == service["metadata"]["name"],
          "statefulset.yaml: DIST_K8S_SERVICE != the Service's name")
    check(env.get("DIST_K8S_REPLICAS", {}).get("value") == str(sts["spec"]["replicas"]),
          "statefulset.yaml: DIST_K8S_REPLICAS != spec.replicas")
    port = env.get("DIST_K8S_PORT", {}).get("value")
    check(any(str(p["containerPort"]) == port for p in container["ports"]),
          "statefulset.yaml: DIST_K8S_PORT != the container port")
    check(any(str(p["port"]) == port for p in service["spec"]["ports"]), "statefulset.yaml: DIST_K8S_PORT != the Service port")
    check(sts["spec"].get("podManagementPolicy") == "Parallel",
          "statefulset.yaml: the workers must start together (podManagementPolicy: Parallel)")
    token_from_secret(env, "statefulset.yaml")


def main():
    deploy = sys.argv[1]
    with open(os.path.join(deploy, "kubernetes", "tfjob.yaml")) as f:
        check_tfjob(yaml.safe_load(f))
    with open(os.path.join(deploy, "kubernetes", "statefulset.yaml")) as f:
        check_statefulset([d for d in yaml.safe_load_all(f) if d])
    for failure in failures:
        print("FAIL:", failure)
    if not failures:
        print("the Kubernetes manifests parse and agree with the library's settings")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
