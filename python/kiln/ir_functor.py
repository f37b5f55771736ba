"""Walking and rewriting the graph IR from Python: ``kiln.ir.ExprVisitor`` and
``kiln.ir.ExprMutator``, the Python counterparts of C++'s (kiln/ir/expr_functor.h), for passes
written in Python (``kiln.transform.function_pass``)::

    class DoubleToAdd(kiln.ir.ExprMutator):
        def visit_call(self, call):
            call = super().visit_call(call)          # arguments first
            if call.op.name == "multiply" and is_two(call.args[1]):
                return kiln.ir.Call("add", [call.args[0], call.args[0]])
            return call

Each node is visited once, children first, so a value used twice stays shared; the walk keeps
its own stack, so graphs deeper than Python's recursion limit are fine. Nodes are told apart by
identity (two wrappers of one Kiln object are the same node).
"""

from . import ir as _ir

__all__ = ["ExprVisitor", "ExprMutator"]


def _children(expr):
    if isinstance(expr, _ir.Call):
        return ([expr.op] if isinstance(expr.op, _ir.Function) else []) + list(expr.args)
    if isinstance(expr, _ir.Tuple):
        return list(expr.fields)
    if isinstance(expr, _ir.TupleGetItem):
        return [expr.tuple]
    if isinstance(expr, _ir.Function):
        return list(expr.params) + [expr.body]
    if isinstance(expr, _ir.If):
        return [expr.cond, expr.then_branch, expr.else_branch]
    if isinstance(expr, _ir.Loop):
        return [expr.trip_count, expr.condition] + list(expr.initial) + [expr.body]
    return []


class _Walker:
    """Calls ``self._visit_node(node)`` once per node under a root, children first."""

    def __init__(self):
        self._memo = {}

    def visit(self, expr):
        """``expr`` visited (for a mutator: rewritten); each node once."""
        stack = [(expr, False)]
        while stack:
            node, expanded = stack.pop()
            if node in self._memo:
                continue
            if expanded:
                self._memo[node] = self._visit_node(node)
                continue
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node) if child not in self._memo)
        return self._memo[expr]

    def _done(self, expr):
        """What visiting ``expr``, a child of the node being visited, gave."""
        return self._memo[expr] if expr in self._memo else self.visit(expr)

    def _visit_node(self, node):
        for kind, method in ((_ir.Call, "visit_call"), (_ir.Tuple, "visit_tuple"),
                             (_ir.TupleGetItem, "visit_tuple_get_item"),
                             (_ir.Function, "visit_function"), (_ir.Var, "visit_var"),
                             (_ir.Constant, "visit_constant"), (_ir.If, "visit_if"),
                             (_ir.Loop, "visit_loop")):
            if isinstance(node, kind):
                return getattr(self, method)(node)
        return self.visit_other(node)


class ExprVisitor(_Walker):
    """Visits every node under an expression once, children first (the bodies of an If or a
    Loop included); override ``visit_call``, ``visit_tuple``, ``visit_tuple_get_item``,
    ``visit_function``, ``visit_var``, ``visit_constant``, ``visit_if``, ``visit_loop`` or
    ``visit_other`` (ops, global variables) to look at them."""

    def visit_call(self, call):
        pass

    def visit_tuple(self, tuple_value):
        pass

    def visit_tuple_get_item(self, item):
        pass

    def visit_function(self, function):
        pass

    def visit_var(self, var):
        pass

    def visit_constant(self, constant):
        pass

    def visit_if(self, node):
        pass

    def visit_loop(self, loop):
        pass

    def visit_other(self, node):
        pass


class ExprMutator(_Walker):
    """Rebuilds an expression bottom up: each ``visit_*`` gets the original node, and the default
    rebuilds it from its children's rewrites (the node itself when none changed). Override one to
    rewrite that kind of node, calling ``super()`` first for the children."""

    def _changed(self, children):
        rewritten = [self._done(child) for child in children]
        return rewritten, any(not new.same_as(old) for new, old in zip(rewritten, children))

    def visit_call(self, call):
        op = self._done(call.op) if isinstance(call.op, _ir.Function) else call.op
        args, changed = self._changed(list(call.args))
        if not changed and op.same_as(call.op):
            return call
        return _ir.Call(op, args, call.attrs)

    def visit_tuple(self, tuple_value):
        fields, changed = self._changed(list(tuple_value.fields))
        return _ir.Tuple(fields) if changed else tuple_value

    def visit_tuple_get_item(self, item):
        tuple_value = self._done(item.tuple)
        if tuple_value.same_as(item.tuple):
            return item
        return _ir.TupleGetItem(tuple_value, item.index)

    def visit_function(self, function):
        body = self._done(function.body)
        if body.same_as(function.body):
            return function
        return _ir.Function(list(function.params), body, None, function.attrs)

    def visit_var(self, var):
        return var

    def visit_constant(self, constant):
        return constant

    def visit_if(self, node):
        children, changed = self._changed([node.cond, node.then_branch, node.else_branch])
        return _ir.If(*children, list(node.sizes)) if changed else node

    def visit_loop(self, loop):
        children, changed = self._changed(_children(loop))
        if not changed:
            return loop
        return _ir.Loop(children[0], children[1], children[2:-1], children[-1], loop.iterations)

    def visit_other(self, node):
        return node
