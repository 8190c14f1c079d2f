package io.vgpu.examples.lab.apiserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Identities over HTTP with fabric8's clients, each holding its own user's token. */
class IdentityAndAdmissionTest {
  private final ApiServerStandIn api = ApiServerStandIn.start();
  @TempDir Path temp;

  @AfterEach
  void stop() {
    api.close();
  }

  @Test
  void aRequestWithoutATokenTheServerIssuedIs401() {
    for (String token : new String[] {"forged", null}) {
      ConfigBuilder config = new ConfigBuilder().withMasterUrl(api.url()).withRequestTimeout(5_000);
      if (token != null) {
        config.withOauthToken(token);
      }
      try (KubernetesClient stranger = new KubernetesClientBuilder().withConfig(config.build()).build()) {
        assertThatThrownBy(() -> stranger.pods().inNamespace("team-a").list()).isInstanceOf(KubernetesClientException.class)
            .satisfies(e -> assertThat(((KubernetesClientException) e).getCode()).isEqualTo(401));
      }
    }
  }

  @Test
  void aKubeconfigCarriesItsUsersTokenAndOnlyItsOwnerReadsIt() throws Exception {
    Path file = api.writeKubeconfig(temp.resolve("kubeconfig"), UserInfo.boundServiceAccount("kube-system", "hami-device-plugin", "w1"));
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("rw-------");
    try (KubernetesClient fromFile = new KubernetesClientBuilder().withConfig(Config.fromKubeconfig(Files.readString(file))).build()) {
      fromFile.nodes().resource(new NodeBuilder().withNewMetadata().withName("w1").endMetadata().build()).create();
      assertThat(fromFile.nodes().withName("w1").get()).isNotNull();
    }
  }
}
