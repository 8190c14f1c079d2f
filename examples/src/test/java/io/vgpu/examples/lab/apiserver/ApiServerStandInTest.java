package io.vgpu.examples.lab.apiserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.Binding;
import io.fabric8.kubernetes.api.model.BindingBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhookConfiguration;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import io.fabric8.kubernetes.client.utils.Serialization;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** What the lab's API server adds to fabric8's CRUD mock, over real HTTP with fabric8's client. */
class ApiServerStandInTest {
  private final ApiServerStandIn api = ApiServerStandIn.start();
  private final KubernetesClient client = api.client();

  @AfterEach
  void stop() {
    client.close();
    api.close();
  }

  private Pod create(String name) {
    Pod pod = new PodBuilder().withNewMetadata().withName(name).endMetadata().withNewSpec().addNewContainer().withName("c").withImage("i").endContainer().endSpec().build();
    return client.pods().inNamespace("default").resource(pod).create();
  }

  private Binding binding(Pod pod, String node) {
    return new BindingBuilder()
        .withNewMetadata().withName(pod.getMetadata().getName()).withNamespace("default").withUid(pod.getMetadata().getUid()).endMetadata()
        .withNewTarget().withKind("Node").withName(node).endTarget()
        .build();
  }

  @Test
  void aBindingSetsTheNodeOnceAndConflictsAfter() {
    Pod pod = create("p1");
    client.bindings().inNamespace("default").resource(binding(pod, "n1")).create();
    Pod bound = client.pods().inNamespace("default").withName("p1").get();
    assertThat(bound.getSpec().getNodeName()).isEqualTo("n1");
    assertThat(bound.getStatus().getConditions()).anySatisfy(c -> assertThat(c.getType() + "=" + c.getStatus()).isEqualTo("PodScheduled=True"));
    assertThatThrownBy(() -> client.bindings().inNamespace("default").resource(binding(pod, "n2")).create())
        .isInstanceOf(KubernetesClientException.class)
        .satisfies(e -> assertThat(((KubernetesClientException) e).getCode()).isEqualTo(409));
    assertThat(client.pods().inNamespace("default").withName("p1").get().getSpec().getNodeName()).isEqualTo("n1");
  }

  @Test
  void aBindingForAnotherIncarnationOfThePodConflicts() {
    Pod pod = create("p1");
    Binding stale = binding(pod, "n1");
    stale.getMetadata().setUid("not-the-pod");
    assertThatThrownBy(() -> client.bindings().inNamespace("default").resource(stale).create())
        .satisfies(e -> assertThat(((KubernetesClientException) e).getCode()).isEqualTo(409));
  }

  @Test
  void podsListedAndWatchedByNodeNameAreThoseOnTheNode() throws Exception {
    BlockingQueue<String> events = new LinkedBlockingQueue<>();
    var watch = client.pods().inAnyNamespace().withField("spec.nodeName", "n1").watch(new Watcher<>() {
      @Override
      public void eventReceived(Action action, Pod resource) {
        events.add(action + " " + resource.getMetadata().getName());
      }

      @Override
      public void onClose(WatcherException cause) {}
    });
    try {
      Pod a = create("a");
      Pod b = create("b");
      client.bindings().inNamespace("default").resource(binding(b, "n2")).create();
      client.bindings().inNamespace("default").resource(binding(a, "n1")).create();
      assertThat(events.poll(5, TimeUnit.SECONDS)).isEqualTo("ADDED a");
      assertThat(client.pods().inAnyNamespace().withField("spec.nodeName", "n1").list().getItems()).extracting(p -> p.getMetadata().getName()).containsExactly("a");
      client.pods().inNamespace("default").withName("b").delete();
      client.pods().inNamespace("default").withName("a").delete();
      assertThat(events.poll(5, TimeUnit.SECONDS)).isEqualTo("DELETED a");
      assertThat(events.poll(300, TimeUnit.MILLISECONDS)).isNull();
    } finally {
      watch.close();
    }
    assertThat(List.of()).isEmpty();
  }

  /**
   * The chart's webhook configuration, stored as the API server stores it, decides per pod: its CEL match
   * condition leaves a pod without vgpu resources alone (created as sent, the webhook never called), and a
   * pod asking for nvidia.com/gpu goes to the webhook — here a port nothing listens on, so the chart's
   * failurePolicy Fail refuses it as kube-apiserver would.
   */
  @Test
  void theChartsWebhookConfigurationIsFollowedAsStored() throws Exception {
    MutatingWebhookConfiguration chart;
    try (var in = Files.newInputStream(Path.of("deploy/scheduler-webhook.yaml"))) {
      chart = Serialization.unmarshal(in, MutatingWebhookConfiguration.class);
    }
    client.admissionRegistration().v1().mutatingWebhookConfigurations().resource(chart).create();
    api.admission(chart.getMetadata().getName(), URI.create("https://127.0.0.1:1"));

    Pod plain = create("plain");
    assertThat(plain.getMetadata().getName()).isEqualTo("plain");
    assertThat(plain.getSpec().getSchedulerName()).isNull();

    Pod wantsGpu = new PodBuilder().withNewMetadata().withName("gpu").endMetadata().withNewSpec().addNewContainer().withName("c").withImage("i")
        .withNewResources().addToLimits("nvidia.com/gpu", new Quantity("1")).endResources().endContainer().endSpec().build();
    assertThatThrownBy(() -> client.pods().inNamespace("default").resource(wantsGpu).create())
        .isInstanceOf(KubernetesClientException.class)
        .hasMessageContaining("failed calling webhook \"vgpu.hami.io\"");
    assertThat(client.pods().inNamespace("default").withName("gpu").get()).isNull();
  }
}
