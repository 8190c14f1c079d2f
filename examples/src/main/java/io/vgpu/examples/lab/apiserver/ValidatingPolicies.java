package io.vgpu.examples.lab.apiserver;

import dev.cel.common.CelValidationException;
import dev.cel.common.types.MapType;
import dev.cel.common.types.SimpleType;
import dev.cel.common.values.NullValue;
import dev.cel.compiler.CelCompiler;
import dev.cel.compiler.CelCompilerFactory;
import dev.cel.extensions.CelExtensions;
import dev.cel.extensions.CelOptionalLibrary;
import dev.cel.parser.CelStandardMacro;
import dev.cel.runtime.CelEvaluationException;
import dev.cel.runtime.CelRuntime;
import dev.cel.runtime.CelRuntimeFactory;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;

/**
 * The ValidatingAdmissionPolicies and their bindings as stored, each expression compiled once, applied to
 * a write as kube-apiserver applies them: a policy takes effect through each binding that names it; the
 * policy's {@code matchConstraints} and the binding's {@code matchResources} must both match; then the
 * policy's {@code matchConditions} (all true, or the policy is skipped), its {@code variables} (each
 * evaluated when first used) and its {@code validations} in order, with {@code object}, {@code
 * oldObject}, {@code request}, {@code namespaceObject} and {@code variables}. A validation that is false
 * denies with its {@code messageExpression}, {@code message} or the expression itself, and its {@code
 * reason} (Invalid by default); an expression that fails denies under {@code failurePolicy: Fail} (the
 * default) and is passed over under {@code Ignore}. A denial counts when the binding's {@code
 * validationActions} has {@code Deny}; {@code Warn} and {@code Audit} have no audience here.
 *
 * <p>The CEL is standard CEL with its macros, the strings extension and optional types, as kube-apiserver
 * has them. Not here: Kubernetes' own CEL libraries (lists, regex, url, quantity, ip and cidr,
 * authorizer), parameters ({@code paramKind}: the policy is then misconfigured and its failure policy
 * applies), audit annotations, and kube-apiserver's type checking against the object's schema (a field
 * name the schema lacks is an error on the first request that reaches it, not at the policy's creation).
 */
final class ValidatingPolicies {
  /** No policy: every write is allowed. */
  static final ValidatingPolicies NONE = new ValidatingPolicies(List.of());

  private static final CelCompiler CEL =
      CelCompilerFactory.standardCelCompilerBuilder()
          .setStandardMacros(CelStandardMacro.STANDARD_MACROS)
          .addLibraries(CelExtensions.strings(), CelOptionalLibrary.INSTANCE)
          .addVar("object", SimpleType.DYN)
          .addVar("oldObject", SimpleType.DYN)
          .addVar("request", SimpleType.DYN)
          .addVar("params", SimpleType.DYN)
          .addVar("namespaceObject", SimpleType.DYN)
          .addVar("variables", MapType.create(SimpleType.STRING, SimpleType.DYN))
          .build();
  private static final CelRuntime RUNTIME =
      CelRuntimeFactory.standardCelRuntimeBuilder().addLibraries(CelExtensions.strings(), CelOptionalLibrary.INSTANCE).build();

  private final List<Policy> policies;

  private ValidatingPolicies(List<Policy> policies) {
    this.policies = policies;
  }

  /**
   * Compiles the stored objects. Bindings that name no stored policy are kept aside (they take effect
   * when their policy is stored, when this is compiled again).
   */
  static ValidatingPolicies compile(List<JsonNode> policyObjects, List<JsonNode> bindingObjects) {
    Map<String, List<Binding>> byPolicy = new HashMap<>();
    for (JsonNode b : bindingObjects) {
      JsonNode spec = b.path("spec");
      Set<String> actions = new HashSet<>();
      spec.path("validationActions").forEach(v -> actions.add(v.asString("")));
      byPolicy.computeIfAbsent(spec.path("policyName").asString(""), k -> new ArrayList<>())
          .add(new Binding(b.path("metadata").path("name").asString(""), actions, spec.has("matchResources") ? ResourceMatch.of(spec.path("matchResources")) : null));
    }
    List<Policy> out = new ArrayList<>();
    for (JsonNode p : policyObjects) {
      String name = p.path("metadata").path("name").asString("");
      List<Binding> bindings = byPolicy.getOrDefault(name, List.of());
      if (!bindings.isEmpty()) {
        bindings.sort(Comparator.comparing(Binding::name));
        out.add(Policy.compile(name, p.path("spec"), bindings));
      }
    }
    out.sort(Comparator.comparing(Policy::name));
    return new ValidatingPolicies(List.copyOf(out));
  }

  /** Whether no policy takes effect (none, or none bound). */
  boolean isEmpty() {
    return policies.isEmpty();
  }

  /** The first denial of the write, in policy then binding name order; empty when it is allowed. */
  Optional<Denial> validate(AdmissionAttributes a) {
    Activation activation = null;
    for (Policy policy : policies) {
      if (!policy.constraints.matches(a)) {
        continue;
      }
      if (policy.configurationError != null) {
        if (policy.failClosed) {
          return Optional.of(new Denial(policy.name, null, "failed to configure policy: " + policy.configurationError, "Invalid"));
        }
        continue;
      }
      List<Decision> decisions = null;
      for (Binding binding : policy.bindings) {
        if (binding.match != null && !binding.match.matches(a)) {
          continue;
        }
        if (decisions == null) {
          if (activation == null) {
            activation = new Activation(a);
          }
          decisions = policy.decide(activation);
        }
        if (binding.actions.contains("Deny") && !decisions.isEmpty()) {
          Decision d = decisions.get(0);
          return Optional.of(new Denial(policy.name, binding.name, d.message, d.reason));
        }
      }
    }
    return Optional.empty();
  }

  /**
   * A denial.
   *
   * @param policy the policy's name
   * @param binding the binding's name; null for a policy that could not be configured
   * @param message what the policy says
   * @param reason the Status reason: Invalid, Forbidden, Unauthorized or RequestEntityTooLarge
   */
  record Denial(String policy, @Nullable String binding, String message, String reason) {
    /** The HTTP status of the reason. */
    int code() {
      return switch (reason) {
        case "Unauthorized" -> 401;
        case "Forbidden" -> 403;
        case "RequestEntityTooLarge" -> 413;
        default -> 422;
      };
    }

    /** What the policy refused, as kube-apiserver words it: {@code ValidatingAdmissionPolicy 'x' with binding 'y' denied request: ...}. */
    String refusal() {
      return binding == null
          ? "ValidatingAdmissionPolicy '" + policy + "' denied request: " + message
          : "ValidatingAdmissionPolicy '" + policy + "' with binding '" + binding + "' denied request: " + message;
    }

    /** The Status message kube-apiserver answers: the refusal after {@code pods "p1" is forbidden: }. */
    String statusMessage(ApiPath path, String name) {
      return path.qualifiedResource() + (name.isEmpty() ? "" : " \"" + name + "\"") + " is forbidden: " + refusal();
    }
  }

  /** A denying decision of one validation. */
  private record Decision(String message, String reason) {}

  private record Binding(String name, Set<String> actions, @Nullable ResourceMatch match) {}

  /** One compiled expression; its compilation error, if any, is reported when it is evaluated. */
  private record Expression(String text, CelRuntime.@Nullable Program program, String compileError) {
    static Expression compile(String text) {
      try {
        return new Expression(text, RUNTIME.createProgram(CEL.compile(text).getAst()), "");
      } catch (CelValidationException | CelEvaluationException e) {
        String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage().lines().findFirst().orElse("").trim();
        return new Expression(text, null, message);
      }
    }

    /** The value, or an {@link ExpressionError} in kube-apiserver's words. */
    Object evaluate(Map<String, Object> activation) {
      if (program == null) {
        throw new ExpressionError("compilation error: " + compileError);
      }
      try {
        return program.eval(activation);
      } catch (CelEvaluationException e) {
        throw new ExpressionError("expression '" + text + "' resulted in error: " + CelValues.errorMessage(e));
      } catch (ExpressionError e) {
        throw e;
      } catch (RuntimeException e) {
        // cel-java's own failure on a value it cannot handle: an error of this expression, not of the server
        throw new ExpressionError("expression '" + text + "' resulted in error: " + e.getMessage());
      }
    }

    boolean isTrue(Map<String, Object> activation) {
      Object value = evaluate(activation);
      if (value instanceof Boolean b) {
        return b;
      }
      throw new ExpressionError("expression '" + text + "' resulted in error: it must evaluate to a bool, not " + value);
    }
  }

  /** An expression that could not be evaluated. */
  private static final class ExpressionError extends RuntimeException {
    ExpressionError(String message) {
      super(message, null, false, false);
    }
  }

  private record Validation(Expression expression, String message, @Nullable Expression messageExpression, String reason) {}

  private static final class Policy {
    private final String name;
    private final boolean failClosed;
    private final ResourceMatch constraints;
    private final List<Binding> bindings;
    private final @Nullable String configurationError;
    private final List<Expression> matchConditions;
    private final Map<String, Expression> variables;
    private final List<Validation> validations;

    private Policy(
        String name, boolean failClosed, ResourceMatch constraints, List<Binding> bindings, @Nullable String configurationError, List<Expression> matchConditions,
        Map<String, Expression> variables, List<Validation> validations) {
      this.name = name;
      this.failClosed = failClosed;
      this.constraints = constraints;
      this.bindings = bindings;
      this.configurationError = configurationError;
      this.matchConditions = matchConditions;
      this.variables = variables;
      this.validations = validations;
    }

    String name() {
      return name;
    }

    static Policy compile(String name, JsonNode spec, List<Binding> bindings) {
      boolean failClosed = !spec.path("failurePolicy").asString("Fail").equals("Ignore");
      String configurationError = spec.has("paramKind") ? "paramKind: parameters are not supported by the lab's API server" : null;
      List<Expression> matchConditions = new ArrayList<>();
      spec.path("matchConditions").forEach(c -> matchConditions.add(Expression.compile(c.path("expression").asString(""))));
      Map<String, Expression> variables = new LinkedHashMap<>();
      spec.path("variables").forEach(v -> variables.put(v.path("name").asString(""), Expression.compile(v.path("expression").asString(""))));
      List<Validation> validations = new ArrayList<>();
      for (JsonNode v : spec.path("validations")) {
        String messageExpression = v.path("messageExpression").asString("");
        validations.add(new Validation(
            Expression.compile(v.path("expression").asString("")),
            v.path("message").asString("").trim(),
            messageExpression.isEmpty() ? null : Expression.compile(messageExpression),
            v.path("reason").asString("Invalid")));
      }
      return new Policy(name, failClosed, ResourceMatch.of(spec.path("matchConstraints")), List.copyOf(bindings), configurationError, List.copyOf(matchConditions),
          variables, List.copyOf(validations));
    }

    /** The denying decisions of this policy for a write (empty: it allows the write). */
    List<Decision> decide(Activation activation) {
      Map<String, Object> values = activation.withVariables(variables);
      List<String> errors = new ArrayList<>();
      for (Expression condition : matchConditions) {
        try {
          if (!condition.isTrue(values)) {
            return List.of(); // a false condition: the policy does not apply, whatever else failed
          }
        } catch (ExpressionError e) {
          errors.add(e.getMessage());
        }
      }
      if (!errors.isEmpty()) {
        return failClosed ? List.of(new Decision(String.join(", ", errors), "Invalid")) : List.of();
      }
      List<Decision> out = new ArrayList<>();
      for (Validation v : validations) {
        try {
          if (v.expression.isTrue(values)) {
            continue;
          }
          out.add(new Decision(message(v, values), v.reason));
        } catch (ExpressionError e) {
          if (failClosed) {
            out.add(new Decision(e.getMessage(), "Invalid"));
          }
        }
      }
      return out;
    }

    /** A failed validation's message: its messageExpression (a one-line string), else its message, else the expression. */
    private static String message(Validation v, Map<String, Object> values) {
      if (v.messageExpression != null) {
        try {
          if (v.messageExpression.evaluate(values) instanceof String s && !s.isBlank() && !s.contains("\n")) {
            return s.trim();
          }
        } catch (ExpressionError e) {
          // falls back to the message, as kube-apiserver does
        }
      }
      return v.message.isEmpty() ? "failed expression: " + v.expression.text.trim() : v.message;
    }
  }

  /**
   * What the expressions of one write see, made once per write and only when some policy matches it:
   * the objects as CEL values.
   */
  private static final class Activation {
    private final Map<String, Object> base = new HashMap<>();

    Activation(AdmissionAttributes a) {
      base.put("object", CelValues.of(a.object()));
      base.put("oldObject", CelValues.of(a.oldObject()));
      base.put("request", a.request());
      base.put("params", NullValue.NULL_VALUE);
      base.put("namespaceObject", a.path().namespace().isEmpty() ? NullValue.NULL_VALUE : CelValues.of(a.namespaces().apply(a.path().namespace())));
    }

    /** The activation of one policy: the base plus its variables, each evaluated at its first use. */
    Map<String, Object> withVariables(Map<String, Expression> variables) {
      Map<String, Object> values = new HashMap<>(base);
      values.put("variables", new LazyVariables(variables, values));
      return values;
    }
  }

  /** A policy's {@code variables}: each evaluated when an expression first reads it, as kube-apiserver does. */
  private static final class LazyVariables extends AbstractMap<String, Object> {
    private final Map<String, Expression> expressions;
    private final Map<String, Object> activation;
    private final Map<String, Object> values = new HashMap<>();
    private final Set<String> evaluating = new HashSet<>();

    LazyVariables(Map<String, Expression> expressions, Map<String, Object> activation) {
      this.expressions = expressions;
      this.activation = activation;
    }

    @Override
    public boolean containsKey(Object key) {
      return expressions.containsKey(key);
    }

    @Override
    public Object get(Object key) {
      Object value = values.get(key);
      if (value != null || !(key instanceof String name) || !expressions.containsKey(name)) {
        return value;
      }
      if (!evaluating.add(name)) {
        throw new ExpressionError("variable '" + name + "' refers to itself");
      }
      try {
        value = expressions.get(name).evaluate(activation);
      } finally {
        evaluating.remove(name);
      }
      values.put(name, value);
      return value;
    }

    @Override
    public Set<Map.Entry<String, Object>> entrySet() {
      Map<String, Object> all = new LinkedHashMap<>();
      expressions.keySet().forEach(k -> all.put(k, get(k)));
      return all.entrySet();
    }
  }
}
