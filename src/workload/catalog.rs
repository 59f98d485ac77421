//! What the simulated agents work on: tenants (and the language their people type in),
//! operations across every consequence tier, model providers, releases, and the goods,
//! suppliers and amounts their orders name.
//!
//! An order is drawn once as an [`Order`] of plain values and rendered as arguments by an
//! interface: the English interface writes ASCII digits and groups amounts (`4,500,000`);
//! the Persian interface writes Persian digits (`۴۵۰۰۰۰۰`). Both renderings of one order
//! canonicalise alike, which is what lets a replay from the other interface be the same
//! intent. The English interface of a Persian-speaking tenant also types Persian words
//! with an Arabic keyboard (Arabic kaf `ك` and yeh `ي`), which canonicalisation unifies too.

use serde_json::{Value, json};

use crate::domain::{AttemptKind, ConsequenceTier, Locale};

/// A tenant and how its people work.
#[derive(Debug, Clone, Copy)]
pub struct TenantProfile {
    pub name: &'static str,
    /// The interface its people usually type in.
    pub locale: Locale,
    pub actors: &'static [&'static str],
    pub releases: &'static [&'static str],
    /// Share of all intents, in relative weight.
    pub weight: u32,
    pub currency: &'static str,
    /// The smallest and largest unit price, in `currency`.
    pub unit_price: (u64, u64),
}

pub const TENANTS: &[TenantProfile] = &[
    TenantProfile {
        name: "acme",
        locale: Locale::EnUs,
        actors: &["agent:procure-bot", "agent:restock-bot"],
        releases: &[
            "procure-agent@2.3.0",
            "procure-agent@2.4.0",
            "procure-agent@2.4.1-canary",
        ],
        weight: 5,
        currency: "USD",
        unit_price: (2, 900),
    },
    TenantProfile {
        name: "pars-trading",
        locale: Locale::FaIr,
        actors: &["agent:kharid-bot", "agent:anbar-bot"],
        releases: &["procure-agent@2.3.0", "procure-agent@2.4.0"],
        weight: 4,
        currency: "IRR",
        unit_price: (15_000, 9_000_000),
    },
    TenantProfile {
        name: "northwind",
        locale: Locale::EnUs,
        actors: &["agent:ops-assistant"],
        releases: &["procure-agent@2.4.0", "procure-agent@2.4.1-canary"],
        weight: 2,
        currency: "EUR",
        unit_price: (3, 1_200),
    },
];

/// One operation an agent performs, and how consequential it is.
#[derive(Debug, Clone, Copy)]
pub struct OperationProfile {
    pub operation: &'static str,
    pub tool: &'static str,
    pub tier: ConsequenceTier,
    /// For non-mutating work: what its reported attempts are.
    pub kind: AttemptKind,
    pub weight: u32,
    pub max_attempts: u32,
    pub deadline_secs: u64,
    /// How long one provider call takes, at scale 1, in milliseconds.
    pub latency_ms: (u64, u64),
}

pub const OPERATIONS: &[OperationProfile] = &[
    OperationProfile {
        operation: "supplier.search",
        tool: "catalog.search",
        tier: ConsequenceTier::Read,
        kind: AttemptKind::Retrieval,
        weight: 14,
        max_attempts: 4,
        deadline_secs: 30,
        latency_ms: (40, 250),
    },
    OperationProfile {
        operation: "inventory.check",
        tool: "erp.stock",
        tier: ConsequenceTier::Read,
        kind: AttemptKind::Retrieval,
        weight: 6,
        max_attempts: 4,
        deadline_secs: 30,
        latency_ms: (20, 120),
    },
    OperationProfile {
        operation: "quote.compare",
        tool: "llm.compare",
        tier: ConsequenceTier::Compute,
        kind: AttemptKind::Inference,
        weight: 14,
        max_attempts: 4,
        deadline_secs: 60,
        latency_ms: (300, 1_400),
    },
    OperationProfile {
        operation: "po.draft",
        tool: "llm.draft",
        tier: ConsequenceTier::Proposal,
        kind: AttemptKind::Proposal,
        weight: 14,
        max_attempts: 3,
        deadline_secs: 60,
        latency_ms: (400, 1_800),
    },
    OperationProfile {
        operation: "purchase_order.create",
        tool: "erp.purchase_orders",
        tier: ConsequenceTier::Write,
        kind: AttemptKind::Dispatch,
        weight: 22,
        max_attempts: 4,
        deadline_secs: 120,
        latency_ms: (0, 0),
    },
    OperationProfile {
        operation: "inventory.reserve",
        tool: "erp.inventory",
        tier: ConsequenceTier::Write,
        kind: AttemptKind::Dispatch,
        weight: 14,
        max_attempts: 4,
        deadline_secs: 120,
        latency_ms: (0, 0),
    },
    OperationProfile {
        operation: "payment.initiate",
        tool: "erp.payments",
        tier: ConsequenceTier::Financial,
        kind: AttemptKind::Dispatch,
        weight: 10,
        max_attempts: 3,
        deadline_secs: 180,
        latency_ms: (0, 0),
    },
];

/// The downstream resource each mutating operation creates, as in the example connector.
pub fn resource_of(operation: &str) -> Option<&'static str> {
    match operation {
        "purchase_order.create" => Some("purchase-orders"),
        "inventory.reserve" => Some("inventory-reservations"),
        "payment.initiate" => Some("payments"),
        _ => None,
    }
}

/// A model provider an agent may call, in failover order.
#[derive(Debug, Clone, Copy)]
pub struct ProviderProfile {
    pub name: &'static str,
    pub models: &'static [&'static str],
    pub regions: &'static [&'static str],
}

pub const PROVIDERS: &[ProviderProfile] = &[
    ProviderProfile {
        name: "openai",
        models: &["gpt-4o", "gpt-4o-mini"],
        regions: &["us-east", "eu-west"],
    },
    ProviderProfile {
        name: "anthropic",
        models: &["claude-sonnet-4", "claude-haiku-4"],
        regions: &["us-east", "eu-central"],
    },
    ProviderProfile {
        name: "mistral",
        models: &["mistral-large", "mistral-small"],
        regions: &["eu-west"],
    },
];

/// A good: its English and Persian names and a stock keeping unit.
struct Good {
    en: &'static str,
    fa: &'static str,
    sku: &'static str,
}

const GOODS: &[Good] = &[
    Good {
        en: "A4 copy paper 80gsm",
        fa: "کاغذ A4 هشتاد گرمی",
        sku: "PAP-A4-80",
    },
    Good {
        en: "Laser printer toner",
        fa: "تونر چاپگر لیزری",
        sku: "TON-LJ-26A",
    },
    Good {
        en: "Office chair",
        fa: "صندلی اداری",
        sku: "CHR-ERG-02",
    },
    Good {
        en: "Cat6 network cable 305m",
        fa: "کابل شبکه Cat6 سیصد و پنج متری",
        sku: "NET-C6-305",
    },
    Good {
        en: "24-inch monitor",
        fa: "مانیتور ۲۴ اینچ",
        sku: "MON-24-IPS",
    },
    Good {
        en: "1 TB SSD",
        fa: "هارد SSD یک ترابایتی",
        sku: "SSD-1T-NV",
    },
    Good {
        en: "Packing tape",
        fa: "چسب بسته‌بندی",
        sku: "TAP-PK-48",
    },
];

const SUPPLIERS_EN: &[&str] = &[
    "Paperline Ltd",
    "Northgate Office Supply",
    "Kestrel Components",
    "Delta Trade GmbH",
];
const SUPPLIERS_FA: &[&str] = &[
    "شرکت پارس کاغذ",
    "نوین تجارت البرز",
    "آریا صنعت",
    "بازرگانی کیان",
];
const WAREHOUSES_EN: &[&str] = &["Central DC", "East depot"];
const WAREHOUSES_FA: &[&str] = &["انبار مرکزی تهران", "انبار اصفهان"];

/// How an interface writes numbers and Persian words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interface {
    /// ASCII digits, grouped amounts, Persian words typed on an Arabic keyboard.
    English,
    /// Persian digits, ungrouped amounts, Persian letters.
    Persian,
}

impl Interface {
    pub fn of(locale: Locale) -> Interface {
        match locale {
            Locale::FaIr => Interface::Persian,
            Locale::EnUs => Interface::English,
        }
    }

    pub fn other(self) -> Interface {
        match self {
            Interface::English => Interface::Persian,
            Interface::Persian => Interface::English,
        }
    }

    pub fn locale(self) -> Locale {
        match self {
            Interface::English => Locale::EnUs,
            Interface::Persian => Locale::FaIr,
        }
    }

    /// A whole number as this interface writes it.
    fn number(self, n: u64) -> String {
        match self {
            Interface::English => n.to_string(),
            Interface::Persian => persian_digits(&n.to_string()),
        }
    }

    /// An amount as this interface writes it.
    fn amount(self, n: u64) -> String {
        match self {
            Interface::English => group_thousands(n),
            Interface::Persian => persian_digits(&n.to_string()),
        }
    }

    /// Free text as this interface's keyboard produces it.
    fn text(self, s: &str) -> String {
        match self {
            Interface::English => arabic_keyboard(s),
            Interface::Persian => s.to_string(),
        }
    }
}

/// ASCII digits written as Persian digits.
pub fn persian_digits(s: &str) -> String {
    s.chars()
        .map(|c| match c.to_digit(10) {
            Some(d) if c.is_ascii_digit() => char::from_u32(0x06F0 + d).unwrap_or(c),
            _ => c,
        })
        .collect()
}

/// Persian kaf and yeh as an Arabic keyboard types them.
fn arabic_keyboard(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\u{06A9}' => '\u{0643}',
            '\u{06CC}' => '\u{064A}',
            other => other,
        })
        .collect()
}

fn group_thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One order, drawn once, rendered by any interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    /// Which of [`GOODS`].
    pub good: usize,
    pub supplier: usize,
    pub warehouse: usize,
    pub qty: u64,
    pub amount: u64,
    pub currency: &'static str,
    /// A number that names the document (invoice, cost centre).
    pub reference: u64,
    /// Whether the tenant's people name things in Persian.
    pub persian_names: bool,
}

impl Order {
    fn good(&self) -> &'static Good {
        &GOODS[self.good % GOODS.len()]
    }

    fn name(
        &self,
        en: &'static [&'static str],
        fa: &'static [&'static str],
        i: usize,
    ) -> &'static str {
        if self.persian_names {
            fa[i % fa.len()]
        } else {
            en[i % en.len()]
        }
    }

    /// The arguments `operation` takes for this order, as `interface` writes them.
    pub fn args(&self, operation: &str, interface: Interface) -> Value {
        let good = self.good();
        let item = interface.text(if self.persian_names { good.fa } else { good.en });
        let supplier = interface.text(self.name(SUPPLIERS_EN, SUPPLIERS_FA, self.supplier));
        let warehouse = interface.text(self.name(WAREHOUSES_EN, WAREHOUSES_FA, self.warehouse));
        let qty = interface.number(self.qty);
        let amount = interface.amount(self.amount);
        let reference = interface.number(self.reference);
        match operation {
            "supplier.search" => {
                json!({"query": item, "max_results": interface.number(10), "in_stock": true})
            }
            "inventory.check" => json!({"sku": good.sku, "warehouse": warehouse}),
            "quote.compare" => json!({
                "item": item,
                "qty": qty,
                "quotes": [supplier, interface.text(self.name(SUPPLIERS_EN, SUPPLIERS_FA, self.supplier + 1))],
                "criteria": ["price", "lead_time"],
            }),
            "po.draft" => {
                json!({"item": item, "qty": qty, "supplier": supplier, "currency": self.currency})
            }
            "inventory.reserve" => json!({"sku": good.sku, "qty": qty, "warehouse": warehouse}),
            "payment.initiate" => json!({
                "invoice": format!("INV-{}", interface.number(self.reference)),
                "payee": supplier,
                "amount": amount,
                "currency": self.currency,
            }),
            // purchase_order.create and anything else: a whole order.
            _ => json!({
                "item": item,
                "sku": good.sku,
                "qty": qty,
                "supplier": supplier,
                "amount": amount,
                "currency": self.currency,
                "cost_center": format!("CC-{reference}"),
            }),
        }
    }

    /// The order changed (another good, quantity and amount): a changed instruction, whose
    /// arguments differ for every operation.
    pub fn changed(&self) -> Order {
        Order {
            good: (self.good + 1) % GOODS.len(),
            amount: self.amount + self.amount / 10 + 1,
            qty: self.qty + 1,
            ..self.clone()
        }
    }
}

/// Purposes, in each language, by operation.
pub fn purpose(operation: &str, persian: bool) -> &'static str {
    match (operation, persian) {
        ("supplier.search", false) => "Find suppliers for the monthly office restock",
        ("supplier.search", true) => "یافتن تأمین‌کننده برای تأمین ماهانه دفتر",
        ("inventory.check", false) => "Check stock before ordering",
        ("inventory.check", true) => "بررسی موجودی انبار پیش از سفارش",
        ("quote.compare", false) => "Compare supplier quotes on price and lead time",
        ("quote.compare", true) => "مقایسه پیش‌فاکتورها از نظر قیمت و زمان تحویل",
        ("po.draft", false) => "Draft the purchase order for approval",
        ("po.draft", true) => "پیش‌نویس سفارش خرید برای تأیید",
        ("inventory.reserve", false) => "Reserve stock for the approved order",
        ("inventory.reserve", true) => "رزرو موجودی برای سفارش تأییدشده",
        ("payment.initiate", false) => "Pay the approved supplier invoice",
        ("payment.initiate", true) => "پرداخت فاکتور تأییدشده تأمین‌کننده",
        (_, false) => "Create the approved purchase order",
        (_, true) => "ثبت سفارش خرید تأییدشده",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::canonicalize;

    fn order(persian_names: bool) -> Order {
        Order {
            good: 0,
            supplier: 1,
            warehouse: 0,
            qty: 1200,
            amount: 4_500_000,
            currency: "IRR",
            reference: 2041,
            persian_names,
        }
    }

    #[test]
    fn both_interfaces_write_one_order_the_same_canonical_way() {
        for persian_names in [true, false] {
            for op in OPERATIONS {
                let o = order(persian_names);
                let fa =
                    canonicalize(&o.args(op.operation, Interface::Persian)).expect("canonical");
                let en =
                    canonicalize(&o.args(op.operation, Interface::English)).expect("canonical");
                assert_eq!(
                    fa.hash, en.hash,
                    "{} persian_names={persian_names}",
                    op.operation
                );
            }
        }
    }

    #[test]
    fn the_persian_interface_writes_persian_digits() {
        let args = order(true).args("purchase_order.create", Interface::Persian);
        assert_eq!(args["qty"], "۱۲۰۰");
        assert_eq!(args["amount"], "۴۵۰۰۰۰۰");
        let en = order(true).args("purchase_order.create", Interface::English);
        assert_eq!(en["amount"], "4,500,000");
    }

    #[test]
    fn a_changed_order_changes_every_operations_hash() {
        let o = order(false);
        for op in OPERATIONS {
            let a = canonicalize(&o.args(op.operation, Interface::English)).expect("canonical");
            let b = canonicalize(&o.changed().args(op.operation, Interface::English))
                .expect("canonical");
            assert_ne!(a.hash, b.hash, "{}", op.operation);
        }
    }

    #[test]
    fn every_mutating_operation_has_a_resource() {
        for op in OPERATIONS.iter().filter(|o| o.tier.is_mutating()) {
            assert!(resource_of(op.operation).is_some(), "{}", op.operation);
        }
    }
}
