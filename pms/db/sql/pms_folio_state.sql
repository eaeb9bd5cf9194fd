-- pms_folio_state
--
-- SPEC rule 5 (an occupied room has an OPEN folio) and the folio rules: the state every folio
-- writer decides on (the folio row, its stay and property fields, lines, payments, posted room
-- nights, the room and asked transaction codes, the stay's other OPEN folios), with the locks of
-- every folio writer taken first (the reservation row, then the folio, FOR UPDATE). VOLATILE, so
-- each statement's snapshot is taken after the locks.
-- Reference: pms.services.cashiering.folio_state._from_models; caller: `_read_state_pg`.
-- Tests: tests/services/test_rule_equivalence.py, tests/services/test_folio_state_function.py.
--
-- Applied by pms.db.function_files (CREATE OR REPLACE, its sha256 recorded in stored_function);
-- a change edits this file and adds a migration that applies it again. It runs with the
-- caller's rights, under row-level security; plan_cache_mode keeps one generic plan per server
-- connection (PgBouncer-safe, unlike SQL PREPARE).

CREATE OR REPLACE FUNCTION pms_folio_state(in_env uuid, in_folio uuid, in_property uuid, in_holder uuid, in_lock boolean, in_code text, in_others boolean)
 RETURNS TABLE(f_row folio, p_timezone character varying, p_business_date date, r_status character varying, r_arrival_date date, r_departure_date date, r_nightly_prices jsonb, r_rate_plan_id uuid, r_adults integer, r_children integer, r_confirmation_number character varying, r_currency character varying, state_charges text, state_payments text, state_posted_nights date[], state_room_code text, state_packages text, state_code text, state_others text)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
AS $function$
BEGIN
    IF in_lock THEN
        PERFORM 1 FROM reservation r
         WHERE r.env_id = in_env AND r.id = (SELECT f.reservation_id FROM folio f
                                              WHERE f.env_id = in_env AND f.id = in_folio)
           FOR UPDATE;
        PERFORM 1 FROM folio f WHERE f.env_id = in_env AND f.id = in_folio FOR UPDATE;
    END IF;
    IF in_others THEN
        RETURN QUERY
        SELECT f,
               p.timezone, p.business_date,
               r.status, r.arrival_date, r.departure_date, r.nightly_prices, r.rate_plan_id,
               r.adults, r.children, r.confirmation_number, r.currency,
               (SELECT json_agg(json_build_array(c.id, c.category, c.description, c.amount::text,
                        c.currency, c.quantity, c.business_date, c.night, c.kind, c.created_at,
                        c.transaction_code, c.parent_id, c.reversal_of, c.moved_from_folio,
                        c.reason) ORDER BY c.created_at, c.id)::text
                  FROM folio_charge c WHERE c.env_id = in_env AND c.folio_id = f.id),
               (SELECT json_agg(json_build_array(m.id, m.amount::text, m.currency, m.method,
                        m.payment_method_id, m.status, m.created_at, m.kind, m.decline_code,
                        m.pre_authorization_id, m.voucher_code, m.external_id, m.refund_of,
                        m.attempts) ORDER BY m.created_at, m.id)::text
                  FROM folio_payment m WHERE m.env_id = in_env AND m.folio_id = f.id),
               (SELECT array_agg(n.night) FROM folio_charge n
                 WHERE n.env_id = in_env AND n.reservation_id = f.reservation_id
                   AND n.kind = 'room' AND n.night IS NOT NULL),
               (SELECT json_build_array(t.code, t.tax_rules)::text FROM transaction_code t
                 WHERE t.env_id = in_env AND t.property_id = f.property_id AND t.category = 'room'
                   AND t.active ORDER BY t.code = 'ROOM' DESC, t.code LIMIT 1),
               (SELECT json_agg(json_build_array(k.code, k.name, k.price::text, k.calculation,
                        k.category) ORDER BY u.ord)::text
                  FROM rate_plan rp
                  CROSS JOIN LATERAL json_array_elements_text(rp.package_codes::json)
                       WITH ORDINALITY AS u(code, ord)
                  JOIN package k ON k.env_id = in_env AND k.property_id = rp.property_id
                                AND k.code = u.code
                 WHERE rp.env_id = in_env AND rp.id = r.rate_plan_id),
               CASE WHEN in_code IS NOT NULL THEN
                   (SELECT json_build_array(t.code, t.name, t.category, t.tax_rules,
                                            t.ledger_account)::text
                      FROM transaction_code t
                     WHERE t.env_id = in_env AND t.property_id = f.property_id
                       AND t.code = in_code AND t.active LIMIT 1)
               END,
               (SELECT json_agg(json_build_array(o.id, o.currency, o.property_id,
                        (SELECT COALESCE(SUM(oc.amount), 0) FROM folio_charge oc
                          WHERE oc.env_id = in_env AND oc.folio_id = o.id)::text,
                        (SELECT COALESCE(SUM(op.amount), 0) FROM folio_payment op
                          WHERE op.env_id = in_env AND op.folio_id = o.id
                            AND op.status = 'CAPTURED')::text) ORDER BY o.id)::text
                  FROM folio o
                 WHERE o.env_id = in_env AND o.reservation_id = f.reservation_id
                   AND o.id <> f.id AND o.status = 'OPEN')
          FROM folio f
          LEFT JOIN reservation r ON r.env_id = in_env AND r.id = f.reservation_id
          JOIN property p ON p.env_id = in_env AND p.id = f.property_id
         WHERE f.env_id = in_env AND f.id = in_folio
           AND (in_property IS NULL OR f.property_id = in_property)
           AND (in_holder IS NULL OR r.guest_profile_id = in_holder);
    ELSE
        RETURN QUERY
        SELECT f,
               p.timezone, p.business_date,
               r.status, r.arrival_date, r.departure_date, r.nightly_prices, r.rate_plan_id,
               r.adults, r.children, r.confirmation_number, r.currency,
               (SELECT json_agg(json_build_array(c.id, c.category, c.description, c.amount::text,
                        c.currency, c.quantity, c.business_date, c.night, c.kind, c.created_at,
                        c.transaction_code, c.parent_id, c.reversal_of, c.moved_from_folio,
                        c.reason) ORDER BY c.created_at, c.id)::text
                  FROM folio_charge c WHERE c.env_id = in_env AND c.folio_id = f.id),
               (SELECT json_agg(json_build_array(m.id, m.amount::text, m.currency, m.method,
                        m.payment_method_id, m.status, m.created_at, m.kind, m.decline_code,
                        m.pre_authorization_id, m.voucher_code, m.external_id, m.refund_of,
                        m.attempts) ORDER BY m.created_at, m.id)::text
                  FROM folio_payment m WHERE m.env_id = in_env AND m.folio_id = f.id),
               (SELECT array_agg(n.night) FROM folio_charge n
                 WHERE n.env_id = in_env AND n.reservation_id = f.reservation_id
                   AND n.kind = 'room' AND n.night IS NOT NULL),
               (SELECT json_build_array(t.code, t.tax_rules)::text FROM transaction_code t
                 WHERE t.env_id = in_env AND t.property_id = f.property_id AND t.category = 'room'
                   AND t.active ORDER BY t.code = 'ROOM' DESC, t.code LIMIT 1),
               (SELECT json_agg(json_build_array(k.code, k.name, k.price::text, k.calculation,
                        k.category) ORDER BY u.ord)::text
                  FROM rate_plan rp
                  CROSS JOIN LATERAL json_array_elements_text(rp.package_codes::json)
                       WITH ORDINALITY AS u(code, ord)
                  JOIN package k ON k.env_id = in_env AND k.property_id = rp.property_id
                                AND k.code = u.code
                 WHERE rp.env_id = in_env AND rp.id = r.rate_plan_id),
               CASE WHEN in_code IS NOT NULL THEN
                   (SELECT json_build_array(t.code, t.name, t.category, t.tax_rules,
                                            t.ledger_account)::text
                      FROM transaction_code t
                     WHERE t.env_id = in_env AND t.property_id = f.property_id
                       AND t.code = in_code AND t.active LIMIT 1)
               END,
               NULL::text
          FROM folio f
          LEFT JOIN reservation r ON r.env_id = in_env AND r.id = f.reservation_id
          JOIN property p ON p.env_id = in_env AND p.id = f.property_id
         WHERE f.env_id = in_env AND f.id = in_folio
           AND (in_property IS NULL OR f.property_id = in_property)
           AND (in_holder IS NULL OR r.guest_profile_id = in_holder);
    END IF;
END
$function$;
