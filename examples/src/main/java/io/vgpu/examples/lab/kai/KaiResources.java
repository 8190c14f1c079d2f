package io.vgpu.examples.lab.kai;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.MixedOperation;
import io.fabric8.kubernetes.client.dsl.Resource;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceList;
import io.vgpu.k8s.kai.KaiKeys;
import io.vgpu.k8s.pod.PodJson;
import tools.jackson.databind.JsonNode;

/**
 * KAI's custom resources as the API serves them: Queue ({@code scheduling.run.ai/v2}, cluster-scoped),
 * PodGroup ({@code v2alpha2}) and BindRequest ({@code v1alpha2}), both namespaced.
 */
public final class KaiResources {
  /** Queues. */
  public static final ResourceDefinitionContext QUEUE = context(KaiKeys.QUEUE_API_VERSION, "Queue", "queues", false);
  /** PodGroups. */
  public static final ResourceDefinitionContext POD_GROUP = context(KaiKeys.POD_GROUP_API_VERSION, "PodGroup", "podgroups", true);
  /** BindRequests. */
  public static final ResourceDefinitionContext BIND_REQUEST = context(KaiKeys.BIND_REQUEST_API_VERSION, "BindRequest", "bindrequests", true);

  private KaiResources() {}

  private static ResourceDefinitionContext context(String apiVersion, String kind, String plural, boolean namespaced) {
    String[] gv = apiVersion.split("/");
    return new ResourceDefinitionContext.Builder().withGroup(gv[0]).withVersion(gv[1]).withKind(kind).withPlural(plural).withNamespaced(namespaced).build();
  }

  /** The operations on one of them. */
  public static MixedOperation<GenericKubernetesResource, GenericKubernetesResourceList, Resource<GenericKubernetesResource>> of(KubernetesClient client,
      ResourceDefinitionContext context) {
    return client.genericKubernetesResources(context);
  }

  /** An object as JSON. */
  public static JsonNode json(Object object) {
    return PodJson.mapper().valueToTree(object);
  }

  /** JSON as an object to send. */
  public static GenericKubernetesResource generic(JsonNode json) {
    return PodJson.mapper().treeToValue(json, GenericKubernetesResource.class);
  }
}
