package io.vgpu.examples.lab.apiserver;

import java.util.Optional;

/**
 * A request path of the Kubernetes API split as kube-apiserver's request info resolver splits it:
 * {@code /api/v1/namespaces/ns/pods/p1/status} is group {@code ""}, version {@code v1}, namespace
 * {@code ns}, resource {@code pods}, name {@code p1}, subresource {@code status}.
 *
 * @param group the API group ({@code ""} for the core group)
 * @param version the API version
 * @param namespace the namespace, {@code ""} for cluster-scoped resources and cluster-wide lists
 * @param resource the resource's plural
 * @param name the object's name, {@code ""} for a collection
 * @param subresource the subresource, {@code ""} for the object itself
 */
record ApiPath(String group, String version, String namespace, String resource, String name, String subresource) {
  /** Parses the path part of a request URI (no query); empty for paths that name no resource ({@code /version}, discovery). */
  static Optional<ApiPath> parse(String rawPath) {
    String[] parts = rawPath.replaceFirst("^/+", "").split("/");
    int i;
    String group;
    if (parts.length >= 3 && parts[0].equals("api")) {
      group = "";
      i = 1;
    } else if (parts.length >= 4 && parts[0].equals("apis")) {
      group = parts[1];
      i = 2;
    } else {
      return Optional.empty();
    }
    String version = parts[i++];
    String namespace = "";
    // namespaces/NS/RESOURCE... is a namespaced resource; namespaces or namespaces/NS alone is the Namespace object
    if (parts.length - i >= 3 && parts[i].equals("namespaces")) {
      namespace = parts[i + 1];
      i += 2;
    }
    String resource = parts[i++];
    String name = i < parts.length ? parts[i++] : "";
    String subresource = i < parts.length ? parts[i++] : "";
    if (i < parts.length || resource.isEmpty()) {
      return Optional.empty();
    }
    return Optional.of(new ApiPath(group, version, namespace, resource, name, subresource));
  }

  /** The path of the object itself (no subresource). */
  String objectPath() {
    return collectionPath() + "/" + name;
  }

  /** The path of the collection the object is in. */
  String collectionPath() {
    String prefix = group.isEmpty() ? "/api/" + version : "/apis/" + group + "/" + version;
    return prefix + (namespace.isEmpty() ? "" : "/namespaces/" + namespace) + "/" + resource;
  }

  /** The resource as kube-apiserver names it in messages: {@code pods}, or {@code leases.coordination.k8s.io}. */
  String qualifiedResource() {
    return group.isEmpty() ? resource : resource + "." + group;
  }
}
