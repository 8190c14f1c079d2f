package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.fabric8.kubernetes.api.model.BindingBuilder;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import org.junit.jupiter.api.Test;

/** The undecoded writes land as fabric8's typed ones do, and a refusal carries the API server's code. */
@EnableKubernetesMockClient(crud = true)
class ApiWritesTest {
  KubernetesClient client;

  @Test
  void patchesAndCreatesLandAndRefusalsCarryTheCode() {
    client.pods().inNamespace("default").resource(new PodBuilder().withNewMetadata().withName("p").withNamespace("default").endMetadata().build()).create();
    client.nodes().resource(new NodeBuilder().withNewMetadata().withName("n").endMetadata().build()).create();
    ApiWrites writes = new ApiWrites(client);

    writes.patchPod("default", "p", "{\"metadata\":{\"annotations\":{\"hami.io/bind-phase\":\"allocating\"}}}");
    assertThat(client.pods().inNamespace("default").withName("p").get().getMetadata().getAnnotations()).containsEntry("hami.io/bind-phase", "allocating");

    writes.patchNode("n", "{\"metadata\":{\"annotations\":{\"hami.io/mutex.lock\":\"x\"}}}");
    assertThat(client.nodes().withName("n").get().getMetadata().getAnnotations()).containsEntry("hami.io/mutex.lock", "x");

    writes.create("default", "bindings", new BindingBuilder().withNewMetadata().withName("p").withNamespace("default").endMetadata().withNewTarget().withKind("Node").withName("n").endTarget().build());
    assertThat(client.bindings().inNamespace("default").withName("p").get().getTarget().getName()).isEqualTo("n");

    KubernetesClientException missing = catchThrowableOfType(KubernetesClientException.class, () -> writes.patchPod("default", "gone", "{}"));
    assertThat(missing.getCode()).isEqualTo(404);
    assertThat(missing.getMessage()).isNotBlank();
  }
}
