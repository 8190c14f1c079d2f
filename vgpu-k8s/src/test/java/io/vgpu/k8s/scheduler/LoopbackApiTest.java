package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.client.KubernetesClientException;
import java.net.URI;
import org.junit.jupiter.api.Test;

class LoopbackApiTest {
  @Test
  void answersTheFourWritesAsAnApiServerAnswersASuccess() throws Exception {
    try (LoopbackApi api = LoopbackApi.start()) {
      ApiWrites writes = new ApiWrites(api.client());

      writes.patchPodAsync(LoopbackApi.NAMESPACE, LoopbackApi.POD, "{\"metadata\":{\"annotations\":{\"a\":\"b\"}}}").join();
      writes.patchNode(LoopbackApi.NODE, NodeLock.lockPatch("7", "2026-01-01T00:00:00Z,warm-up,p"));
      writes.create(LoopbackApi.NAMESPACE, "bindings", "{\"kind\":\"Binding\"}");
      writes.create(LoopbackApi.NAMESPACE, "events", "{\"kind\":\"Event\"}");

      assertThat(api.writes()).isEqualTo(4);
    }
  }

  @Test
  void anythingElseIsNotFoundAndNotCounted() throws Exception {
    try (LoopbackApi api = LoopbackApi.start()) {
      ApiWrites writes = new ApiWrites(api.client());

      assertThatThrownBy(() -> writes.patchPod("default", "someone-else", "{}"))
          .isInstanceOfSatisfying(KubernetesClientException.class, e -> assertThat(e.getCode()).isEqualTo(404));
      assertThat(api.writes()).isZero();
    }
  }

  @Test
  void itsClientReachesTheLoopbackOnlyAndCarriesNoCredentials() throws Exception {
    try (LoopbackApi api = LoopbackApi.start()) {
      URI master = URI.create(api.client().getConfiguration().getMasterUrl());

      assertThat(master.getHost()).isIn("127.0.0.1", "localhost");
      assertThat(master.getScheme()).isEqualTo("http");
      assertThat(api.client().getConfiguration().getOauthToken()).isNull();
      assertThat(api.client().getConfiguration().getUsername()).isNull();
      assertThat(api.client().getConfiguration().getClientCertData()).isNull();
      assertThat(api.client().getConfiguration().getClientCertFile()).isNull();
    }
  }
}
